-- A local account's follow request to a remote account whose Accept never came is sent again
-- (src/federation/follow-repair.ts, docs/federation.md#follows): `sent_at` is when its Follow
-- last went, `resends` how often it was sent again (3 is the last; an incoming request is set to 3
-- when first seen, as nothing of it is this server's to send).
ALTER TABLE "follow_requests"
    ADD COLUMN "sent_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    ADD COLUMN "resends" INTEGER NOT NULL DEFAULT 0;

-- The requests still to look at, by when they were sent: the resend pass reads the due ones.
CREATE INDEX "follow_requests_resend_idx" ON "follow_requests" ("sent_at") WHERE "resends" < 3;
