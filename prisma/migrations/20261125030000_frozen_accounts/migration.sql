-- The frozen accounts, for the visibility rule's check of every note a page walks
-- (src/domain/notes/visibility.ts unfrozenSql): a partial index, almost always empty, read once
-- per statement. Prisma's schema cannot state a partial index: scripts/create-migration.ts keeps
-- the engine from dropping it.
CREATE INDEX "accounts_frozen_where_idx" ON "accounts" ("id") WHERE "frozen";
