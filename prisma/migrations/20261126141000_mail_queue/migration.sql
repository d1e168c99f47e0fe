-- Mail waits here until it is sent (src/mail/queue.ts): written in the transaction of what
-- causes it (a registration rolled back sends nothing, one committed always has its mail),
-- sent after commit by a worker on every instance, retried with backoff until give_up_at.
CREATE TABLE "mail_outbox" (
    "id" BIGSERIAL NOT NULL,
    "recipient" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "give_up_at" TIMESTAMPTZ(3) NOT NULL DEFAULT (CURRENT_TIMESTAMP + interval '24 hours'),
    "claimed_by" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mail_outbox_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "mail_outbox_next_attempt_at_id_idx" ON "mail_outbox"("next_attempt_at", "id");

-- Every instance's worker LISTENs: the mail goes out as soon as its transaction commits (a
-- notification is delivered at commit, and never for a rollback).
CREATE FUNCTION "announce_mail_queued"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('murmur_mail_queued', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER "mail_outbox_queued" AFTER INSERT ON "mail_outbox" FOR EACH STATEMENT
  EXECUTE FUNCTION "announce_mail_queued"();
