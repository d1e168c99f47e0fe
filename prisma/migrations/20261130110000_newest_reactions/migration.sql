-- A note's newest reactions older than `before` (all when null), newest first, `count` of them at
-- most (src/domain/reactions/shown.ts newestReactions): always the ordered walk of
-- reactions_note_id_id_idx that stops at `count`. Written inline, the planner chose by its
-- estimate of the note's reactions, the table's average for a note it does not know (a new one)
-- or one given by a statement's outer row, a few; for a viral note it then read every reaction
-- through a bitmap and sorted them to keep 20. With sorts disabled here, the walk is the only plan
-- without one. A function with its own settings is not inlined: ~5 µs a call.
CREATE FUNCTION newest_reactions(note bigint, count integer, before bigint DEFAULT NULL) RETURNS SETOF reactions
  LANGUAGE sql STABLE SET enable_sort = off
  AS $$ SELECT * FROM reactions WHERE note_id = note AND id < COALESCE(before, 9223372036854775807)
    ORDER BY id DESC LIMIT count $$;
