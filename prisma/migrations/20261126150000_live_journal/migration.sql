-- Live updates (CONTRACT 12) in commit order. A note's id is minted before its transaction
-- commits, so notes commit out of id order, and a stream resumed "after id X" missed a note with
-- a lower id that committed after X was sent. Each event is now a row of this journal, written
-- by the transaction that causes it, and its position is (xid, seq): the writing transaction's
-- id, then the row's own number. Instances read the journal only below the horizon
-- pg_snapshot_xmin(pg_current_snapshot()), the oldest transaction still running: every
-- transaction below it has ended, so no row can appear behind a position once it was read, and
-- a stream resumed after a position misses nothing and repeats nothing (src/domain/live/journal.ts).
-- NOTIFY murmur_live only wakes the instances; the journal says what happened.
--   kind 'n' a note created, 'd' a note deleted (detail: "<author>.<visibility>"), 'N' a
--   notification created (detail: its recipient), 'A' an announcement created.
CREATE TABLE "live_events" (
  "seq" BIGSERIAL PRIMARY KEY,
  "xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),
  "kind" TEXT NOT NULL,
  "ref_id" BIGINT NOT NULL,
  "detail" TEXT,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX "live_events_position" ON "live_events" ("xid", "seq");
-- Last-Event-ID names the note, notification or announcement: its position is found by its id.
CREATE INDEX "live_events_ref_id" ON "live_events" ("ref_id");

DROP TRIGGER "notes_live_created" ON "notes";
DROP TRIGGER "notes_live_deleted" ON "notes";
DROP TRIGGER "notifications_live_created" ON "notifications";
DROP TRIGGER "announcements_live_created" ON "announcements";
DROP FUNCTION "announce_live"();

-- One function per trigger: static statements, planned once per connection.
CREATE FUNCTION "live_notes_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id) SELECT 'n', id FROM changed ORDER BY id;
  PERFORM pg_notify('murmur_live', '');
  RETURN NULL;
END
$$;
CREATE FUNCTION "live_notes_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id, detail)
    SELECT 'd', id, author_id || '.' || visibility FROM changed ORDER BY id;
  PERFORM pg_notify('murmur_live', '');
  RETURN NULL;
END
$$;
CREATE FUNCTION "live_notifications_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id, detail) SELECT 'N', id, recipient_id::text FROM changed ORDER BY id;
  PERFORM pg_notify('murmur_live', '');
  RETURN NULL;
END
$$;
CREATE FUNCTION "live_announcements_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id) SELECT 'A', id FROM changed ORDER BY id;
  PERFORM pg_notify('murmur_live', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER "notes_live_created" AFTER INSERT ON "notes" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "live_notes_created"();
CREATE TRIGGER "notes_live_deleted" AFTER DELETE ON "notes" REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "live_notes_deleted"();
CREATE TRIGGER "notifications_live_created" AFTER INSERT ON "notifications" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "live_notifications_created"();
CREATE TRIGGER "announcements_live_created" AFTER INSERT ON "announcements" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "live_announcements_created"();
