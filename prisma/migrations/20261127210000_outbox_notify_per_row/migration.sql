-- The federation outbox's NOTIFY fires for each row written, not for each statement: every local
-- note's statement has an INSERT into the outbox that writes a row only when a remote server may
-- see the note (src/domain/notes/federation.ts), and a statement trigger notified for the ones
-- that wrote none too. A transaction that notifies holds PostgreSQL's one notify lock through its
-- commit's WAL flush (bench/README.md "Writes"), so every note committed one at a time again:
-- 32 authors posting fell from 1,401 to 919 notes/s. Several rows of one transaction still make
-- one notification (PostgreSQL folds identical ones).
DROP TRIGGER "federation_outbox_written" ON "federation_outbox";
CREATE TRIGGER "federation_outbox_written" AFTER INSERT ON "federation_outbox" FOR EACH ROW
  EXECUTE FUNCTION "announce_federation_outbox"();
