-- A moderator's decision about a remote server (docs/federation.md#moderation): `block` refuses its
-- activities and delivers nothing to it, `silence` lets its notes reach only those who follow its
-- accounts. A host without a row is allowed. Every change is announced on murmur_instance_policies,
-- so that each server instance of a fleet reloads its copy at once (src/domain/instances/policies.ts),
-- whoever made the change: a route, the CLI or an operator's SQL.
CREATE TYPE "InstancePolicyKind" AS ENUM ('block', 'silence');

CREATE TABLE "instance_policies" (
  "host" TEXT NOT NULL,
  "policy" "InstancePolicyKind" NOT NULL,
  "moderator_id" BIGINT,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "instance_policies_pkey" PRIMARY KEY ("host")
);

CREATE FUNCTION "announce_instance_policy_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('murmur_instance_policies', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER "instance_policies_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "instance_policies"
  FOR EACH STATEMENT EXECUTE FUNCTION "announce_instance_policy_change"();
