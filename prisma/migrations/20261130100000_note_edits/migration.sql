-- When a note's text last changed (a remote author's Update; an operator's SQL): null for a note
-- never edited. A search's memory of a word's newest matches (src/domain/search/window.ts) asks
-- the notes edited since it learned them, through the partial index, which holds only those.
ALTER TABLE "notes" ADD COLUMN "edited_at" TIMESTAMPTZ(3);

CREATE INDEX notes_edited_at_idx ON notes (edited_at) WHERE edited_at IS NOT NULL;

-- Set by the database whoever writes the text, so that no path can change what a note says
-- without its search memory hearing of it.
CREATE FUNCTION note_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.edited_at := now();
  RETURN NEW;
END $$;

CREATE TRIGGER notes_edited BEFORE UPDATE OF content, cw_comment ON notes
  FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.cw_comment IS DISTINCT FROM NEW.cw_comment)
  EXECUTE FUNCTION note_edited();
