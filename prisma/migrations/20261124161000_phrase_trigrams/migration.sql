-- Phrase indexes (src/search/postgres.ts phraseCandidates): trigrams of the lower-cased text with
-- each space made a letter, so they span words. Prisma's schema cannot state an index on an
-- expression: scripts/create-migration.ts keeps the engine from dropping these two.
CREATE INDEX "notes_content_phrase_trgm_idx" ON "notes" USING gin (translate(lower("content"), ' ', 'ǂ') gin_trgm_ops);
CREATE INDEX "notes_cw_comment_phrase_trgm_idx" ON "notes" USING gin (translate(lower("cw_comment"), ' ', 'ǂ') gin_trgm_ops);
