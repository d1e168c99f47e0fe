// One page of notes for any timeline: the scope, the one visibility rule (src/domain/notes/
// visibility.ts), the filters and paging by id, newest first, in a fixed number of queries.
import { Prisma, queryRows } from "../../db/client.ts";
import type { DriveFile } from "../../generated/prisma/client.ts";
import type { Context } from "../context.ts";
import { NOTE_INCLUDE, type NoteView } from "../notes/service.ts";
import { audienceSql, unfrozenSql, unmutedSql, visibleTo } from "../notes/visibility.ts";
import { olderThan, parseBeforeId } from "../paging.ts";
import {
  type NoteReactions,
  parseReactionColumns,
  type ReactionColumns,
  reactionColumns,
  withReactions,
} from "../reactions/shown.ts";
import { optionalAccount } from "../sessions/caller.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";

export const PAGE = 20;

export interface TimelineQuery {
  beforeId?: string;
  /** Only notes with files. */
  hasAttachment?: boolean;
  /** Leave out notes with a file flagged NSFW. */
  noNsfw?: boolean;
  /** Notes per page, at most PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit?: number;
  /**
   * Only these notes, at most REPLAY_PAGE of the newest: what a live stream resumed after it
   * missed (docs/live.md#resume; src/domain/live/journal.ts).
   */
  missed?: bigint[];
}

export const REPLAY_PAGE = 100;

export async function notePage(
  ctx: Context,
  viewer: CallerAccount | undefined,
  scope: Prisma.NoteWhereInput,
  query: TimelineQuery,
): Promise<NoteView[]> {
  const before = parseBeforeId(query.beforeId);
  const where: Prisma.NoteWhereInput[] = [visibleTo(viewer), scope, olderThan(before)];
  if (query.hasAttachment) where.push({ attachments: { some: {} } });
  if (query.noNsfw) where.push({ attachments: { none: { file: { nsfw: true } } } });
  const notes = await ctx.db.note.findMany({
    where: { AND: where },
    orderBy: { id: "desc" },
    take: Math.min(query.limit ?? PAGE, PAGE + 1),
    include: NOTE_INCLUDE,
  });
  return await withReactions(ctx, notes);
}

/**
 * How the notes a statement picks (`SELECT n.* FROM notes n ...`, in order) are loaded: as
 * NoteViews (notesSelectedBy), or already in a protocol's wire form by a view written in SQL
 * (src/rest/views/note-sql.ts). The domain picks the notes; the loader only shows them.
 */
export type NoteLoader<T> = (ctx: Context, page: Prisma.Sql) => Promise<T[]>;

/** The default loader, as any NoteLoader's type: notesSelectedBy's NoteViews. */
export const noteViews = ((ctx, page) => notesSelectedBy(ctx, page)) as NoteLoader<never>;

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

/**
 * The notes `page` selects (`SELECT n.* FROM notes n ...`, in order), with what a note shows,
 * in the one statement: what notePage loads through Prisma's include, for a page whose choice
 * of notes Prisma cannot express. Its authors' columns are PUBLIC_ACCOUNT_SELECT's.
 */
export async function notesSelectedBy(ctx: Context, page: Prisma.Sql): Promise<NoteView[]> {
  const rows = await queryRows<NoteRow>(
    ctx.db,
    Prisma.sql`
    WITH page AS (${page})
    SELECT p.id, p.author_id AS "authorId", p.content, p.cw_comment AS "cwComment", p.visibility::text AS visibility,
      p.send_to_id AS "sendToId", p.renote_id AS "renoteId", p.reply_to_id AS "replyToId", p.created_at AS "createdAt",
      json_build_object('id', a.id::text, 'name', a.name, 'email', a.email, 'nickname', a.nickname, 'bio', a.bio,
        'locked', a.locked, 'avatarFileId', a.avatar_file_id::text, 'headerFileId', a.header_file_id::text,
        'followersCount', a.followers_count, 'followingCount', a.following_count, 'notesCount', a.notes_count) AS author,
      ${reactionColumns(Prisma.sql`p.id`, optionalAccount(ctx)?.id)},
      COALESCE((SELECT json_agg(json_build_object('position', x.position, 'id', f.id::text,
          'ownerId', f.owner_id::text, 'name', f.name, 'mime', f.mime, 'size', f.size::text, 'nsfw', f.nsfw,
          'blurhash', f.blurhash, 'thumbnailSize', f.thumbnail_size, 'createdAt', f.created_at) ORDER BY x.position)
        FROM note_attachments x JOIN drive_files f ON f.id = x.file_id WHERE x.note_id = p.id), '[]') AS attachments
    FROM page p JOIN accounts a ON a.id = p.author_id
    ORDER BY p.id DESC`,
  );
  return rows.map((row) => ({
    ...row,
    author: {
      ...row.author,
      id: BigInt(row.author.id),
      avatarFileId: optionalId(row.author.avatarFileId),
      headerFileId: optionalId(row.author.headerFileId),
    },
    ...parseReactionColumns(row.id, row),
    attachments: row.attachments.map(({ position, ...f }) => ({
      noteId: row.id,
      fileId: BigInt(f.id),
      position,
      file: {
        ...f,
        id: BigInt(f.id),
        ownerId: optionalId(f.ownerId),
        size: BigInt(f.size),
        createdAt: new Date(f.createdAt),
      },
    })),
  }));
}

const optionalId = (id: string | null) => (id === null ? null : BigInt(id));

/** A row of notesSelectedBy as PostgreSQL sends it: JSON carries ids and sizes as text. */
type NoteRow = Omit<NoteView, "author" | "attachments" | keyof NoteReactions> &
  ReactionColumns & {
    author: Omit<NoteView["author"], "id" | "avatarFileId" | "headerFileId"> & {
      id: string;
      avatarFileId: string | null;
      headerFileId: string | null;
    };
    attachments: (Omit<DriveFile, "id" | "ownerId" | "size" | "createdAt"> & {
      position: number;
      id: string;
      ownerId: string | null;
      size: string;
      createdAt: string;
    })[];
  };
