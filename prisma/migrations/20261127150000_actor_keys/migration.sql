-- The key pairs of ActivityPub actors (docs/federation.md#actors): an RSA pair for draft-cavage
-- HTTP Signatures and an Ed25519 pair for Object Integrity Proofs, as JWKs. `owner` is the
-- actor's identifier: a local account's id in decimal, or `_instance` for the instance actor,
-- which has no account row; so no foreign key. An account's rows stay when it is deleted (its
-- row stays too, as a tombstone): its Delete is still to be signed with them.
CREATE TYPE "ActorKeyKind" AS ENUM ('rsa', 'ed25519');

CREATE TABLE "actor_keys" (
    "owner" TEXT NOT NULL,
    "kind" "ActorKeyKind" NOT NULL,
    "public_key" JSONB NOT NULL,
    "private_key" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "actor_keys_pkey" PRIMARY KEY ("owner", "kind")
);
