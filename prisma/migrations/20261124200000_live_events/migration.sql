-- Live updates (CONTRACT 12): what streams show is announced on the murmur_live channel when it
-- commits (NOTIFY is delivered at commit, never for a rolled-back write), to every instance,
-- whoever wrote it. Ids only (a payload holds at most 8,000 bytes), one notification per 150
-- rows of a statement, so a bulk insert is a few notifications rather than one per row:
--   n:<id>,<id>...                       notes created
--   d:<id>.<author>.<visibility>,...     notes deleted (their row is gone: who may have seen them)
--   N:<id>.<recipient>,...               notifications created
--   A:<id>,...                           announcements created
CREATE FUNCTION "announce_live"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  chunk text;
BEGIN
  FOR chunk IN EXECUTE format(
    'SELECT string_agg(item, '','') FROM (SELECT %s AS item, (row_number() OVER ()) / 150 AS part FROM changed) s GROUP BY part',
    TG_ARGV[1])
  LOOP
    PERFORM pg_notify('murmur_live', TG_ARGV[0] || ':' || chunk);
  END LOOP;
  RETURN NULL;
END
$$;

CREATE TRIGGER "notes_live_created" AFTER INSERT ON "notes" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "announce_live"('n', 'id::text');
CREATE TRIGGER "notes_live_deleted" AFTER DELETE ON "notes" REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "announce_live"('d', 'id || ''.'' || author_id || ''.'' || visibility');
CREATE TRIGGER "notifications_live_created" AFTER INSERT ON "notifications" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "announce_live"('N', 'id || ''.'' || recipient_id');
CREATE TRIGGER "announcements_live_created" AFTER INSERT ON "announcements" REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION "announce_live"('A', 'id::text');
