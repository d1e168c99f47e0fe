-- What a local account's act is to send to another server (src/federation/outbox.ts), written in
-- the transaction of the act itself: a process that dies after the commit leaves the row, and a
-- relay of any process of the fleet hands it to the federation queue (federation_messages),
-- deleting it in the transaction of that enqueue.
--
-- `kind` names the activity (follow, unfollow, accept, reject, block, unblock); `sender` is the
-- local account that sends it, `recipient` the remote account it goes to; `activity_id` is the
-- activity's id, fixed when written; `object_id` the id of the Follow an Undo, Accept or Reject
-- names, when known. No foreign keys: an account deleted meanwhile leaves a row the relay drops.
-- `run_at` is when it may next be tried (a failed enqueue waits), `attempts` how often it failed.
CREATE TABLE "federation_outbox" (
    "id" BIGSERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "sender" BIGINT NOT NULL,
    "recipient" BIGINT NOT NULL,
    "activity_id" TEXT NOT NULL,
    "object_id" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "run_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "federation_outbox_pkey" PRIMARY KEY ("id")
);

-- One sender's rows in order: only its oldest may be relayed (its activities are queued in the
-- order its acts committed).
CREATE INDEX "federation_outbox_sender_id_idx" ON "federation_outbox"("sender", "id");
CREATE INDEX "federation_outbox_run_at_id_idx" ON "federation_outbox"("run_at", "id");

-- Relays LISTEN: a row is relayed as soon as its transaction commits (a notification is
-- delivered at commit, and never for a rollback).
CREATE FUNCTION "announce_federation_outbox"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('murmur_federation_outbox', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER "federation_outbox_written" AFTER INSERT ON "federation_outbox" FOR EACH STATEMENT
  EXECUTE FUNCTION "announce_federation_outbox"();
