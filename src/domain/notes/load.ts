// How a NoteView is loaded: by one statement for any choice of notes, the domain picking the notes
// (`SELECT n.* FROM notes n ...`) and a loader showing them: as NoteViews (notesSelectedBy), or
// already in a protocol's wire form by a view written in SQL (src/rest/views/note-sql.ts).
import { Prisma, queryRows } from "../../db/client.ts";
import type { DriveFile } from "../../generated/prisma/client.ts";
import { PUBLIC_ACCOUNT_SELECT } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { type NoteReactions, parseReactionColumns, type ReactionColumns, reactionColumns } from "../reactions/shown.ts";
import { optionalAccount } from "../sessions/caller.ts";

/** What a note shows: its author, reactions and attachments, loaded in a fixed number of queries. */
// Its reactions are bounded, with counts (reactions/shown.ts). The include is the type's: every
// NoteView is loaded by notesSelectedBy.
const NOTE_INCLUDE = {
  author: { select: PUBLIC_ACCOUNT_SELECT },
  attachments: { orderBy: { position: "asc" }, include: { file: true } },
} satisfies Prisma.NoteInclude;

export type NoteView = Prisma.NoteGetPayload<{ include: typeof NOTE_INCLUDE }> & NoteReactions;

/** How the notes a statement picks (`SELECT n.* FROM notes n ...`, in order) are loaded. */
export type NoteLoader<T> = (ctx: Context, page: Prisma.Sql) => Promise<T[]>;

/** The default loader, as any NoteLoader's type: notesSelectedBy's NoteViews. */
export const noteViews = ((ctx, page) => notesSelectedBy(ctx, page)) as NoteLoader<never>;

/**
 * The notes `page` selects (`SELECT n.* FROM notes n ...`, in order), with what a note shows,
 * in the one statement. Its authors' columns are PUBLIC_ACCOUNT_SELECT's.
 */
export async function notesSelectedBy(ctx: Context, page: Prisma.Sql): Promise<NoteView[]> {
  const rows = await queryRows<NoteRow>(
    ctx.db,
    Prisma.sql`
    WITH page AS (${page})
    SELECT p.id, p.author_id AS "authorId", p.content, p.cw_comment AS "cwComment", p.visibility::text AS visibility,
      p.send_to_id AS "sendToId", p.renote_id AS "renoteId", p.reply_to_id AS "replyToId", p.created_at AS "createdAt",
      p.uri, p.url, p.edited_at AS "editedAt",
      json_build_object('id', a.id::text, 'name', a.name, 'email', a.email, 'nickname', a.nickname, 'bio', a.bio,
        'locked', a.locked, 'avatarFileId', a.avatar_file_id::text, 'headerFileId', a.header_file_id::text,
        'followersCount', a.followers_count, 'followingCount', a.following_count, 'notesCount', a.notes_count,
        'host', a.host, 'avatarUrl', a.avatar_url, 'headerUrl', a.header_url) AS author,
      ${reactionColumns(Prisma.sql`p.id`, optionalAccount(ctx)?.id)},
      COALESCE((SELECT json_agg(json_build_object('position', x.position, 'id', f.id::text,
          'ownerId', f.owner_id::text, 'name', f.name, 'mime', f.mime, 'size', f.size::text, 'nsfw', f.nsfw,
          'blurhash', f.blurhash, 'thumbnailSize', f.thumbnail_size, 'createdAt', f.created_at, 'url', f.url)
          ORDER BY x.position)
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
