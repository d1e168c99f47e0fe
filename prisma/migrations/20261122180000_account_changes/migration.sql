-- Every change to an account row is announced on the murmur_account_changes channel, so that
-- each server instance forgets its cached copy (src/domain/sessions/caller-cache.ts), whoever
-- made the change: a request, another instance, the CLI or an operator's SQL. The counters and
-- time stamp that others' actions move are left out, so that posting does not empty the cache.
CREATE FUNCTION "announce_account_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('murmur_account_changes', OLD.id::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "accounts_changed" AFTER UPDATE ON "accounts" FOR EACH ROW
  WHEN ((to_jsonb(OLD) - 'followers_count' - 'notes_count' - 'updated_at')
    IS DISTINCT FROM (to_jsonb(NEW) - 'followers_count' - 'notes_count' - 'updated_at'))
  EXECUTE FUNCTION "announce_account_change"();

CREATE TRIGGER "accounts_deleted" AFTER DELETE ON "accounts" FOR EACH ROW
  EXECUTE FUNCTION "announce_account_change"();
