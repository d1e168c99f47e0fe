-- A note's outbox row names, besides its author's remote followers, the other servers' accounts
-- it reaches (mentioned, replied to, renoted or quoted: src/domain/notes/federation.ts), each
-- server's shared inbox once when relayed. An array on the one row, not a row each: the row is
-- one activity, and rows of one server would each send it there again.
ALTER TABLE "federation_outbox" ADD COLUMN "recipients" BIGINT[] NOT NULL DEFAULT '{}';
