-- Issue 28. Refusals that name a row are counted apart from outages: only refusals set a row aside.
ALTER TABLE "search_outbox" ADD COLUMN "refusals" INTEGER NOT NULL DEFAULT 0;

-- The notes waiting to be indexed, read by every search: without it, a backlog of removes (an
-- account's deletion) made each search scan the outbox.
-- Prisma's schema cannot state a partial index: the name ends in _where_idx so that
-- scripts/create-migration.ts keeps the engine from dropping it.
CREATE INDEX "search_outbox_upserts_where_idx" ON "search_outbox"("target_id") WHERE "op" = 'upsert';

-- The outbox position (src/search/worker.ts): `position` is the last one handed out, `confirmed`
-- the last one Meilisearch's marker is known to hold; a rebuild's generation before its swap
-- completes, and one found stale (a restored index or database): an index carrying either is
-- rebuilt by itself; the fresh index a rebuild writes into, deleted by the next one if it was killed.
ALTER TABLE "search_index_state" ADD COLUMN "position" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "confirmed" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "pending_generation" TEXT,
ADD COLUMN "stale_generation" TEXT,
ADD COLUMN "rebuild_index" TEXT;

-- Notes removed from the live index while a rebuild copies into a fresh one: removed from the
-- fresh one too once it is swapped in.
CREATE TABLE "search_rebuild_removes" (
    "index_name" TEXT NOT NULL,
    "target_id" BIGINT NOT NULL,

    CONSTRAINT "search_rebuild_removes_pkey" PRIMARY KEY ("index_name", "target_id")
);
