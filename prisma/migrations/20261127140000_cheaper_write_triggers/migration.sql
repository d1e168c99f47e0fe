-- What a note, a notification and a counter cost in triggers (measured in
-- bench/README.md "Writes"), kept to the same guarantees:
--
-- 1. accounts_changed fires only for an UPDATE that sets a column besides the counters others'
--    acts move (followers_count, notes_count) and updated_at. Its WHEN clause made two jsonb of
--    the whole account row on every note posted (notes_count + 1): 45-50 µs of the 80 µs that
--    update costs. The WHEN clause stays, so a column set to the value it had announces nothing,
--    as before. The column list is every column of accounts but those three, read from the
--    catalog here; test/account-changes.test.ts holds it whole when columns are added.
DROP TRIGGER "accounts_changed" ON "accounts";
DO $$
BEGIN
  EXECUTE format(
    'CREATE TRIGGER "accounts_changed" AFTER UPDATE OF %s ON "accounts" FOR EACH ROW
       WHEN ((to_jsonb(OLD) - ''followers_count'' - ''notes_count'' - ''updated_at'')
         IS DISTINCT FROM (to_jsonb(NEW) - ''followers_count'' - ''notes_count'' - ''updated_at''))
       EXECUTE FUNCTION "announce_account_change"()',
    (SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
      WHERE attrelid = '"accounts"'::regclass AND attnum > 0 AND NOT attisdropped
        AND attname NOT IN ('followers_count', 'notes_count', 'updated_at')));
END $$;

-- 2. The check that a row names no deleted account (migration 20261125060000), for the two
--    tables every note with a mention writes, as functions of their own columns: the generic
--    refuse_deleted_accounts makes a jsonb of the row and loops over its arguments. Same locks
--    (KEY SHARE on each named account, taken whether or not it is deleted), same refusals.
CREATE FUNCTION "refuse_deleted_author"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  alive boolean;
BEGIN
  SELECT deleted_at IS NULL INTO alive FROM accounts WHERE id = NEW.author_id FOR KEY SHARE;
  -- A missing row is the foreign key's to refuse.
  IF alive IS FALSE THEN
    RAISE EXCEPTION 'account % is deleted', NEW.author_id
      USING ERRCODE = 'MU404', TABLE = TG_TABLE_NAME, COLUMN = 'author_id';
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER "notes_accounts_alive" ON "notes";
CREATE TRIGGER "notes_accounts_alive" BEFORE INSERT ON "notes"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_author"();

-- A notification to or from a deleted account is left out (the act that caused it stands).
CREATE FUNCTION "skip_deleted_notified"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Both rows locked in one statement (the subquery locks every row it reads, deleted or not).
  IF EXISTS (SELECT FROM (SELECT deleted_at FROM accounts WHERE id IN (NEW.recipient_id, NEW.actor_id)
      FOR KEY SHARE) named WHERE named.deleted_at IS NOT NULL) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER "notifications_accounts_alive" ON "notifications";
CREATE TRIGGER "notifications_accounts_alive" BEFORE INSERT ON "notifications"
  FOR EACH ROW EXECUTE FUNCTION "skip_deleted_notified"();

-- 3. The live journal's triggers for notes and notifications write their rows as before, but
--    NOTIFY only when the statement inserted some and did not set murmur.wakes_live: a note's and
--    a reaction's statements set it and wake the instances themselves after their commit
--    (src/domain/live/wake.ts): a NOTIFY takes, at pre-commit, a lock every notifying transaction
--    of the database waits for, held through the commit's WAL flush, and concurrent notes had
--    committed one at a time behind it. Writes that do not set it (SQL of an operator, the seed,
--    other writers) notify as before. A note's statement runs its notifications' INSERT even for
--    none when it builds them from found mentions; that one notifies nothing either.
CREATE OR REPLACE FUNCTION "live_notes_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id) SELECT 'n', id FROM changed ORDER BY id;
  IF FOUND AND current_setting('murmur.wakes_live', true) IS DISTINCT FROM 'on' THEN
    PERFORM pg_notify('murmur_live', '');
  END IF;
  RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION "live_notifications_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO live_events (kind, ref_id, detail) SELECT 'N', id, recipient_id::text FROM changed ORDER BY id;
  IF FOUND AND current_setting('murmur.wakes_live', true) IS DISTINCT FROM 'on' THEN
    PERFORM pg_notify('murmur_live', '');
  END IF;
  RETURN NULL;
END
$$;
