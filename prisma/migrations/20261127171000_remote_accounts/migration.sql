-- Remote accounts (docs/federation.md#remote-accounts) are rows of `accounts` with the `host` of
-- their server and their actor's `uri`; local accounts have neither. A remote account's name key
-- is its lower-cased `name@host`: no local name has an `@` (rules.ts), so the one unique index
-- keeps local names unique among local accounts and remote names unique per host, and every look-up
-- of a local name (login among them) finds no remote account. Remote accounts have no e-mail or
-- passphrase: an `.invalid` address (RFC 2606) that no mail reaches and an empty hash that no
-- passphrase verifies against; they are never verified. Their public keys are not copied: Fedify
-- fetches and caches them (federation_kv).
ALTER TABLE "accounts"
  ADD COLUMN "host" TEXT,
  ADD COLUMN "uri" TEXT,
  ADD COLUMN "inbox_url" TEXT,
  ADD COLUMN "shared_inbox_url" TEXT,
  ADD COLUMN "followers_url" TEXT,
  ADD COLUMN "avatar_url" TEXT,
  ADD COLUMN "header_url" TEXT,
  ADD COLUMN "fetched_at" TIMESTAMPTZ(3),
  ADD CONSTRAINT "accounts_remote_whole" CHECK (("host" IS NULL) = ("uri" IS NULL) AND ("host" IS NULL) = ("inbox_url" IS NULL));

CREATE UNIQUE INDEX "accounts_uri_key" ON "accounts"("uri");

-- The Follow activity's id of a request: a remote requester's, which the Accept or Reject sent
-- when it is answered names; or the one this server sent for a local requester, which the remote
-- Accept or Reject may name by id alone.
ALTER TABLE "follow_requests" ADD COLUMN "activity_uri" TEXT;
CREATE INDEX "follow_requests_activity_uri" ON "follow_requests"("activity_uri") WHERE "activity_uri" IS NOT NULL;
