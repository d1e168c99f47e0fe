-- A report received from another server (a Flag, docs/federation.md#moderation) has no local
-- reporter: it was sent by a server (Mastodon sends it as its instance actor), kept as its host.
-- Every report has exactly one of the two.
ALTER TABLE "reports"
    ALTER COLUMN "reporter_id" DROP NOT NULL,
    ADD COLUMN "reporter_host" TEXT,
    ADD CONSTRAINT "reports_reporter_check" CHECK (("reporter_id" IS NULL) <> ("reporter_host" IS NULL));
