-- Notes and files of other servers (docs/federation.md#notes). A remote note is a row of notes
-- whose author is a remote account, under a local snowflake id: `uri` is its ActivityPub id (an
-- Announce's id for a remote renote), unique so that an activity taken twice stores it once, and
-- `url` the page its server shows it at. Both are null for local notes. A remote file is not
-- copied: `url` is where its server keeps it (null for a file stored here).
ALTER TABLE "notes" ADD COLUMN "uri" TEXT, ADD COLUMN "url" TEXT;
CREATE UNIQUE INDEX "notes_uri_key" ON "notes" ("uri");
ALTER TABLE "drive_files" ADD COLUMN "url" TEXT;
