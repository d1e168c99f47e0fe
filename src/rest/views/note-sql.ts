// The FullNote wire shape (./note.ts fullNoteView) written in SQL, for the REST pages that return
// many notes (timelines, lists, search): PostgreSQL sends each note as its JSON text and the page
// is answered as it comes. Building NoteViews from JSON, then wire objects, then JSON again had
// been most of the server's CPU per page, and more per note than PostgreSQL's own work for it
// (bench/README.md). test/note-sql.test.ts holds every note it writes equal to fullNoteView's.
import { type Db, type Prisma, queryBytes } from "../../db/client.ts";
import { KeyedBatches, perClient } from "../../db/keyed-writes.ts";
import type { NoteLoader } from "../../domain/timelines/page.ts";
import { jsonSql } from "../../http/views/wire.ts";
import { type Viewer, viewerOf } from "../../projection/field.ts";
import { noteStatements, noteStatementsForCallers } from "../../projection/note.ts";
import { FULL_NOTE } from "./note.ts";

/** A FullNote as JSON text in UTF-8, ready to send as it came (db/client.ts queryBytes). */
export type FullNoteJson = Buffer & { readonly fullNote: unique symbol };

const fullNoteStatement = noteStatements((t, viewer) => jsonSql(FULL_NOTE, t, viewer));

/** The notes `page` selects, each as the FullNote JSON fullNoteView would give it for this caller. */
export const fullNotesJson: NoteLoader<FullNoteJson> = (ctx, page) => fullNotesFor(ctx.db, page, viewerOf(ctx));

async function fullNotesFor(db: Db, page: Prisma.Sql, viewer: Viewer): Promise<FullNoteJson[]> {
  const rows = await queryBytes<{ node: FullNoteJson }>(db, fullNoteStatement(page, viewer));
  return rows.map((row) => row.node);
}

const fullNoteStatementForCallers = noteStatementsForCallers((t, viewer) => jsonSql(FULL_NOTE, t, viewer));

/** fullNotesJson of one page for each of `callerIds` (accounts), in one statement. */
export async function fullNotesJsonForCallers(
  db: Db,
  page: Prisma.Sql,
  viewer: Viewer,
  callerIds: bigint[],
): Promise<FullNoteJson[][]> {
  const rows = await queryBytes<{ caller: Buffer; node: FullNoteJson }>(
    db,
    fullNoteStatementForCallers(page, viewer, callerIds),
  );
  const pages = callerIds.map((): FullNoteJson[] => []);
  for (const row of rows) pages[row.caller.readInt32BE() - 1].push(row.node);
  return pages;
}

interface Asked {
  page: Prisma.Sql;
  viewer: Viewer;
}

/** Callers reading one page together: at most this many in one statement. */
const MOST_TOGETHER = 64;

const pagesTogether = perClient(
  (db) =>
    new KeyedBatches<Asked, FullNoteJson[]>(
      (asked) =>
        fullNotesJsonForCallers(
          db,
          asked[0].page,
          asked[0].viewer,
          asked.map((a) => a.viewer.viewerId as bigint),
        ),
      MOST_TOGETHER,
      ({ page, viewer }) => fullNotesFor(db, page, viewer),
    ),
);

/**
 * fullNotesJson, the callers of one page (with accounts) that ask while one of them is read read
 * together after it, in one statement (src/db/keyed-writes.ts): for the answers to a viral note's
 * reactions, each caller's own (bench/README.md "Reactions in one statement").
 */
export const fullNotesJsonTogether: NoteLoader<FullNoteJson> = (ctx, page) => {
  const viewer = viewerOf(ctx);
  if (viewer.viewerId === undefined) return fullNotesJson(ctx, page);
  return pagesTogether(ctx.db).run(`${page.text}\0${page.values.join(",")}`, { page, viewer });
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
