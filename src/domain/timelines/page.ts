// One page of notes for any timeline: the scope, the one visibility rule (src/domain/notes/
// visibility.ts), the filters and paging by id, newest first, in a fixed number of queries.
import { Prisma } from "../../db/client.ts";
import type { Context } from "../context.ts";
import { type NoteLoader, type NoteView, noteViews } from "../notes/load.ts";
import { audienceSql, unfrozenSql, unmutedSql } from "../notes/visibility.ts";
import { parseBeforeId } from "../paging.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";

// The loaders live beside the NoteView they load; the timelines' callers name them here too.
export { type NoteLoader, notesSelectedBy, noteViews } from "../notes/load.ts";

export const PAGE = 20;

export interface TimelineQuery {
  beforeId?: string;
  /** Only notes with files. */
  hasAttachment?: boolean;
  /** Leave out notes with a file flagged NSFW. */
  noNsfw?: boolean;
  /** The global timeline with the public notes of other servers known here (docs/federation.md). */
  federated?: boolean;
  /** Notes per page, at most PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit?: number;
  /**
   * Only these notes, at most REPLAY_PAGE of the newest: what a live stream resumed after it
   * missed (docs/live.md#resume; src/domain/live/journal.ts).
   */
  missed?: bigint[];
}

export const REPLAY_PAGE = 100;

/** A page of the notes `n` for which `where` (SQL) holds, newest first, past the cursor, filtered. */
export async function notesWhere<T = NoteView>(
  ctx: Context,
  where: Prisma.Sql,
  query: TimelineQuery,
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  const before = parseBeforeId(query.beforeId);
  const page = Prisma.sql`
    SELECT n.* FROM notes n WHERE ${where} ${noteConditions(before, query)}
    ORDER BY n.id DESC LIMIT ${pageLimit(query)}`;
  return await load(ctx, page);
}

/**
 * A page of the notes by `authors` (one, or a subquery of their ids) the viewer may see, direct ones
 * apart: a home timeline of few followees, a list, an account's notes. Each author's newest
 * notes are read from the (author, id) index, a page at most, and the pages merged, where a walk
 * of the notes' primary key would skip every note by someone else. Authors' frozen flags are
 * read once per author, not per note, and so are the viewer's mutes for a feed of the viewer's
 * (home, a list: `feed`), where a muted author's notes are not read at all.
 */
export async function authorsPage<T = NoteView>(
  ctx: Context,
  viewer: CallerAccount | undefined,
  authors: bigint | Prisma.Sql,
  query: TimelineQuery,
  { feed }: { feed: boolean },
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  const before = parseBeforeId(query.beforeId);
  const limit = pageLimit(query);
  const page = Prisma.sql`
    SELECT n.* FROM accounts a
    CROSS JOIN LATERAL (
      SELECT n.* FROM notes n
      WHERE n.author_id = a.id AND n.visibility <> 'direct' AND ${audienceSql(viewer)}
        ${noteConditions(before, query)}
      ORDER BY n.id DESC LIMIT ${limit}
    ) n
    WHERE ${typeof authors === "bigint" ? Prisma.sql`a.id = ${authors}` : Prisma.sql`a.id IN (${authors})`}
      ${unfrozenSql(viewer, Prisma.raw("a"))} ${feed ? unmutedSql(viewer, Prisma.sql`a.id`) : Prisma.empty}
    ORDER BY n.id DESC LIMIT ${limit}`;
  return await load(ctx, page);
}

/**
 * The conditions of a page of notes `n` past the cursor, with the filters asked for. What does
 * not apply is left out of the text rather than switched off by a parameter, and pageLimit is
 * written in: each variant is then a statement PostgreSQL plans once per connection, not on
 * every execution (planning had cost more than running it).
 */
function noteConditions(before: bigint | undefined, query: TimelineQuery): Prisma.Sql {
  return Prisma.join(
    [
      before === undefined ? Prisma.empty : Prisma.sql`AND n.id < ${before}`,
      query.missed === undefined ? Prisma.empty : Prisma.sql`AND n.id = ANY(${query.missed}::bigint[])`,
      query.hasAttachment
        ? Prisma.sql`AND EXISTS (SELECT 1 FROM note_attachments x WHERE x.note_id = n.id)`
        : Prisma.empty,
      query.noNsfw
        ? Prisma.sql`AND NOT EXISTS (
            SELECT 1 FROM note_attachments x JOIN drive_files d ON d.id = x.file_id WHERE x.note_id = n.id AND d.nsfw)`
        : Prisma.empty,
    ],
    " ",
  );
}

/** The page size as SQL text: an integer of ours, at most PAGE + 1 (REPLAY_PAGE for a replay). */
function pageLimit(query: TimelineQuery): Prisma.Sql {
  const most = query.missed === undefined ? PAGE + 1 : REPLAY_PAGE;
  return Prisma.raw(String(Math.max(1, Math.min(Math.trunc(query.limit ?? PAGE), most))));
}
