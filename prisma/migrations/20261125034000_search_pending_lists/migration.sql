-- The search indexes' pending lists: a GIN index takes new entries into an unsorted list that
-- every search reads whole until it is merged (at 4 MB by default, or by vacuum). After 20,000
-- new notes a keyword search took 8.1 ms instead of 2.1 and a phrase 7.7 instead of 0.2 (300,000
-- notes); the bench's hostile phrase search, run after its note-creation runs, fell from 776 to
-- 195 req/s. At 256 kB the list costs a search at most ~0.5 ms, and a note ~0.1 ms more to
-- write (merged more often); without the list (fastupdate off) a note cost 0.5 ms more.
ALTER INDEX "notes_content_trgm_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "notes_cw_comment_trgm_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "notes_content_phrase_trgm_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "notes_cw_comment_phrase_trgm_idx" SET (gin_pending_list_limit = 256);
