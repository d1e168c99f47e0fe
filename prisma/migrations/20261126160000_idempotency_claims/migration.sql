-- Each running instance's lease (src/db/instance-lease.ts): renewed while the instance lives,
-- deleted at its shutdown. An Idempotency-Key claim names the instance running it, so that a claim
-- left unanswered by an instance that died is free again once that instance's lease has expired,
-- instead of holding its key 24 hours (src/http/idempotency.ts).
CREATE TABLE "instance_leases" (
    "instance_id" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "instance_leases_pkey" PRIMARY KEY ("instance_id")
);

-- Null on the claims made before this column (they are free once older than a lease).
ALTER TABLE "idempotency_records" ADD COLUMN "claimed_by" TEXT;
