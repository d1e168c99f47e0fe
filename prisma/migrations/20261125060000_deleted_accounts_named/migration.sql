-- No row may name a deleted account once its deletion has finished (CONTRACT 13). The deletion
-- job's last batch locks the account row FOR UPDATE and removes what names it; a write that had
-- read the account alive before it was marked (a follow, say) could still insert its row after
-- that batch: the foreign key only asks that the tombstone row exists. Each insert below takes
-- the foreign key's own lock (KEY SHARE) on every account it names and looks at deleted_at:
--   - the lock is taken before the last batch: the batch waits for the insert to commit and
--     removes its row;
--   - the batch holds its lock: the insert waits, then reads the row as the mark left it.
-- KEY SHARE does not wait for the mark itself (an UPDATE of no key column), so it adds no lock
-- order to those the counters take. A named account that is deleted refuses the row with
-- SQLSTATE MU404 (answered 404 ACCOUNT_NOT_FOUND, src/db/client.ts accountGone), except a
-- notification, which is left out: the act that caused it (a reply to the account) stands.
CREATE FUNCTION "refuse_deleted_accounts"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  named jsonb := to_jsonb(NEW);
  column_name text;
  account bigint;
  alive boolean;
BEGIN
  FOREACH column_name IN ARRAY TG_ARGV LOOP
    account := (named ->> column_name)::bigint;
    CONTINUE WHEN account IS NULL;
    SELECT deleted_at IS NULL INTO alive FROM accounts WHERE id = account FOR KEY SHARE;
    -- A missing row is the foreign key's to refuse.
    IF alive IS FALSE THEN
      IF TG_TABLE_NAME = 'notifications' THEN
        RETURN NULL;
      END IF;
      RAISE EXCEPTION 'account % is deleted', account
        USING ERRCODE = 'MU404', TABLE = TG_TABLE_NAME, COLUMN = column_name;
    END IF;
  END LOOP;
  RETURN NEW;
END $$;

CREATE TRIGGER "notes_accounts_alive" BEFORE INSERT ON "notes"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('author_id');
CREATE TRIGGER "reactions_accounts_alive" BEFORE INSERT ON "reactions"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "bookmarks_accounts_alive" BEFORE INSERT ON "bookmarks"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "follows_accounts_alive" BEFORE INSERT ON "follows"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('follower_id', 'followee_id');
CREATE TRIGGER "follow_requests_accounts_alive" BEFORE INSERT ON "follow_requests"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('requester_id', 'target_id');
CREATE TRIGGER "blocks_accounts_alive" BEFORE INSERT ON "blocks"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('blocker_id', 'blocked_id');
CREATE TRIGGER "mutes_accounts_alive" BEFORE INSERT ON "mutes"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('muter_id', 'muted_id');
CREATE TRIGGER "lists_accounts_alive" BEFORE INSERT ON "lists"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('owner_id');
CREATE TRIGGER "list_members_accounts_alive" BEFORE INSERT ON "list_members"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "drive_files_accounts_alive" BEFORE INSERT ON "drive_files"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('owner_id');
CREATE TRIGGER "sessions_accounts_alive" BEFORE INSERT ON "sessions"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "email_tokens_accounts_alive" BEFORE INSERT ON "email_tokens"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "announcement_reads_accounts_alive" BEFORE INSERT ON "announcement_reads"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('account_id');
CREATE TRIGGER "notifications_accounts_alive" BEFORE INSERT ON "notifications"
  FOR EACH ROW EXECUTE FUNCTION "refuse_deleted_accounts"('recipient_id', 'actor_id');
