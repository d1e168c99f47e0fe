-- A reaction checks that its account is alive in its own statement (src/domain/reactions/
-- service.ts react: the account row locked KEY SHARE and its deleted_at read before the insert,
-- as refuse_deleted_accounts does), the only place reactions are written. The trigger's
-- PL/pgSQL call and to_jsonb of each row cost a reaction burst on one note about a tenth of its
-- throughput.
DROP TRIGGER "reactions_accounts_alive" ON "reactions";
