// The FullNote wire shape (./note.ts fullNoteView) written in SQL, for the REST pages that return
// many notes (timelines, lists, search): PostgreSQL sends each note as its JSON text and the page
// is answered as it comes. Building NoteViews from JSON, then wire objects, then JSON again had
// been most of the server's CPU per page, and more per note than PostgreSQL's own work for it
// (bench/README.md). test/note-sql.test.ts holds every note it writes equal to fullNoteView's.
import { queryBytes } from "../../db/client.ts";
import type { NoteLoader } from "../../domain/timelines/page.ts";
import { jsonSql } from "../../http/views/wire.ts";
import { viewerOf } from "../../projection/field.ts";
import { noteStatements } from "../../projection/note.ts";
import { FULL_NOTE } from "./note.ts";

/** A FullNote as JSON text in UTF-8, ready to send as it came (db/client.ts queryBytes). */
export type FullNoteJson = Buffer & { readonly fullNote: unique symbol };

const fullNoteStatement = noteStatements((t, viewer) => jsonSql(FULL_NOTE, t, viewer));

/** The notes `page` selects, each as the FullNote JSON fullNoteView would give it for this caller. */
export const fullNotesJson: NoteLoader<FullNoteJson> = async (ctx, page) => {
  const rows = await queryBytes<{ node: FullNoteJson }>(ctx.db, fullNoteStatement(page, viewerOf(ctx)));
  return rows.map((row) => row.node);
};

const [OPEN, COMMA, CLOSE] = ["[", ",", "]"].map((c) => Buffer.from(c));

/** A JSON array of notes as fullNotesJson wrote them. */
export function fullNotesArray(notes: FullNoteJson[]): Buffer {
  const parts: Buffer[] = [OPEN];
  for (const note of notes) {
    if (parts.length > 1) parts.push(COMMA);
    parts.push(note);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}
