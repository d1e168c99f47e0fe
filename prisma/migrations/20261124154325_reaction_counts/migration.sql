-- Reactions get a snowflake id, the order they are shown and paged in (CONTRACT 5). Existing
-- rows get one from their creation time (a sequence within each millisecond), as Murmur's
-- generator would have given them.
ALTER TABLE "reactions" ADD COLUMN "id" BIGINT;
UPDATE "reactions" r SET "id" = numbered.id
FROM (
  SELECT note_id, account_id,
    ((floor(extract(epoch FROM created_at) * 1000)::bigint - 1640995200000) << 22)
      + row_number() OVER (PARTITION BY created_at ORDER BY note_id, account_id) - 1 AS id
  FROM "reactions"
) AS numbered
WHERE r.note_id = numbered.note_id AND r.account_id = numbered.account_id;
ALTER TABLE "reactions" ALTER COLUMN "id" SET NOT NULL;

-- CreateTable
CREATE TABLE "note_reaction_counts" (
    "note_id" BIGINT NOT NULL,
    "emoji" TEXT NOT NULL,
    "shard" SMALLINT NOT NULL,
    "count" INTEGER NOT NULL,

    CONSTRAINT "note_reaction_counts_pkey" PRIMARY KEY ("note_id","emoji","shard")
);

-- CreateIndex
CREATE UNIQUE INDEX "reactions_id_key" ON "reactions"("id");

-- CreateIndex
CREATE INDEX "reactions_note_id_id_idx" ON "reactions"("note_id", "id" DESC);

-- AddForeignKey
ALTER TABLE "note_reaction_counts" ADD CONSTRAINT "note_reaction_counts_note_id_fkey" FOREIGN KEY ("note_id") REFERENCES "notes"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Counts are kept in the reaction's own transaction, whatever removes it (an unreaction, a
-- deleted note or account). A reacting account always counts in the same one of 16 shards, so
-- concurrent reactions to one note wait on 16 rows rather than one, and a shard never goes
-- below 0. When the note itself is being deleted, its count rows are already gone: the UPDATE
-- finds nothing.
CREATE FUNCTION note_reaction_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO note_reaction_counts (note_id, emoji, shard, count)
    VALUES (NEW.note_id, NEW.emoji, (hashint8(NEW.account_id) & 15)::smallint, 1)
    ON CONFLICT (note_id, emoji, shard) DO UPDATE SET count = note_reaction_counts.count + 1;
  ELSE
    UPDATE note_reaction_counts SET count = count - 1
    WHERE note_id = OLD.note_id AND emoji = OLD.emoji AND shard = (hashint8(OLD.account_id) & 15)::smallint;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER reactions_counted AFTER INSERT OR DELETE ON reactions
FOR EACH ROW EXECUTE FUNCTION note_reaction_counted();

INSERT INTO note_reaction_counts (note_id, emoji, shard, count)
SELECT note_id, emoji, (hashint8(account_id) & 15)::smallint, count(*)
FROM reactions GROUP BY 1, 2, 3;
