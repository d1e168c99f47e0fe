-- Whether an author has a follower on another server, asked by every local note's statement
-- (src/domain/notes/federation.ts: its Create goes to them), is one probe of a partial index:
-- follows marks each follow whose follower is a remote account. Asked through accounts, an author
-- with many local followers and none remote had each follower looked up, at every note.
ALTER TABLE "follows" ADD COLUMN "remote_follower" BOOLEAN NOT NULL DEFAULT false;
UPDATE "follows" f SET "remote_follower" = true FROM "accounts" a WHERE a."id" = f."follower_id" AND a."host" IS NOT NULL;
CREATE INDEX "follows_remote_followers_idx" ON "follows" ("followee_id") WHERE "remote_follower";

-- Set by the database whoever inserts the follow: an account's host never changes.
CREATE FUNCTION "mark_remote_follower"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."remote_follower" := EXISTS (SELECT 1 FROM "accounts" WHERE "id" = NEW."follower_id" AND "host" IS NOT NULL);
  RETURN NEW;
END $$;
CREATE TRIGGER "follows_remote_follower" BEFORE INSERT ON "follows" FOR EACH ROW EXECUTE FUNCTION "mark_remote_follower"();
