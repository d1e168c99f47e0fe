-- accounts_changed lists the columns whose change it announces (migration 20261127140000): every
-- column of accounts but the counters others' acts move and updated_at. The remote accounts'
-- columns (migration 20261127171000) came after it and were not listed; listed again from the
-- catalog, as then (test/account-changes.test.ts holds the list whole).
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
