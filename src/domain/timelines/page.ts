// One page of notes for any timeline: the scope, the one visibility rule, the filters and
// paging by id, newest first, in a fixed number of queries.
import type { Prisma } from "../../db/client.ts";
import type { DriveFile } from "../../generated/prisma/client.ts";
import type { Context } from "../context.ts";
import { NOTE_INCLUDE, type NoteView } from "../notes/service.ts";
import { visibleTo } from "../notes/visibility.ts";
import { olderThan, parseBeforeId, timelinePage } from "../paging.ts";
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
}

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
  return timelinePage(before, notes);
}

/**
 * The notes `page` selects (`SELECT n.* FROM notes n ...`, in order), with what a note shows,
 * in the one statement: what notePage loads through Prisma's include, for a page whose choice
 * of notes Prisma cannot express. Its authors' columns are PUBLIC_ACCOUNT_SELECT's.
 */
export async function notesSelectedBy(ctx: Context, page: Prisma.Sql): Promise<NoteView[]> {
  const rows = await ctx.db.$queryRaw<NoteRow[]>`
    WITH page AS (${page})
    SELECT p.id, p.author_id AS "authorId", p.content, p.cw_comment AS "cwComment", p.visibility::text AS visibility,
      p.send_to_id AS "sendToId", p.renote_id AS "renoteId", p.reply_to_id AS "replyToId", p.created_at AS "createdAt",
      json_build_object('id', a.id::text, 'name', a.name, 'email', a.email, 'nickname', a.nickname, 'bio', a.bio,
        'locked', a.locked, 'avatarFileId', a.avatar_file_id::text, 'headerFileId', a.header_file_id::text,
        'followersCount', a.followers_count, 'followingCount', a.following_count, 'notesCount', a.notes_count) AS author,
      COALESCE((SELECT json_agg(json_build_object('accountId', r.account_id::text, 'emoji', r.emoji,
          'createdAt', r.created_at) ORDER BY r.created_at)
        FROM reactions r WHERE r.note_id = p.id), '[]') AS reactions,
      COALESCE((SELECT json_agg(json_build_object('position', x.position, 'id', f.id::text,
          'ownerId', f.owner_id::text, 'name', f.name, 'mime', f.mime, 'size', f.size::text, 'nsfw', f.nsfw,
          'blurhash', f.blurhash, 'thumbnailSize', f.thumbnail_size, 'createdAt', f.created_at) ORDER BY x.position)
        FROM note_attachments x JOIN drive_files f ON f.id = x.file_id WHERE x.note_id = p.id), '[]') AS attachments
    FROM page p JOIN accounts a ON a.id = p.author_id
    ORDER BY p.id DESC`;
  return rows.map((row) => ({
    ...row,
    author: {
      ...row.author,
      id: BigInt(row.author.id),
      avatarFileId: optionalId(row.author.avatarFileId),
      headerFileId: optionalId(row.author.headerFileId),
    },
    reactions: row.reactions.map((r) => ({
      noteId: row.id,
      accountId: BigInt(r.accountId),
      emoji: r.emoji,
      createdAt: new Date(r.createdAt),
    })),
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
type NoteRow = Omit<NoteView, "author" | "reactions" | "attachments"> & {
  author: Omit<NoteView["author"], "id" | "avatarFileId" | "headerFileId"> & {
    id: string;
    avatarFileId: string | null;
    headerFileId: string | null;
  };
  reactions: { accountId: string; emoji: string; createdAt: string }[];
  attachments: (Omit<DriveFile, "id" | "ownerId" | "size" | "createdAt"> & {
    position: number;
    id: string;
    ownerId: string | null;
    size: string;
    createdAt: string;
  })[];
};
