// The FullNote wire shape (./note.ts fullNoteView) written in SQL, for the REST pages that return
// many notes (timelines, lists, search): PostgreSQL sends each note as its JSON text and the page
// is answered as it comes. Building NoteViews from JSON, then wire objects, then JSON again had
// been most of the server's CPU per page, and more per note than PostgreSQL's own work for it
// (bench/README.md). test/note-sql.test.ts holds every note it writes equal to fullNoteView's.
import { Prisma, queryRows } from "../../db/client.ts";
import { fileUrlSql, isoTimeSql } from "../../domain/drive/urls.ts";
import { countsByEmoji, REACTIONS_SHOWN } from "../../domain/reactions/shown.ts";
import { optionalAccount } from "../../domain/sessions/caller.ts";
import type { NoteLoader } from "../../domain/timelines/page.ts";

/** A FullNote as JSON text, ready to send. */
export type FullNoteJson = string & { readonly fullNote: unique symbol };

/**
 * The reactions shownReactions picks: the newest REACTIONS_SHOWN, or, when the caller's own is
 * not among them, the newest but one and the caller's own (older than all of them).
 */
function shownReactionsSql(noteId: Prisma.Sql, viewerId: bigint | undefined): Prisma.Sql {
  const shown = Prisma.raw(String(REACTIONS_SHOWN));
  const newest = Prisma.sql`SELECT id, emoji, account_id FROM reactions WHERE note_id = ${noteId} ORDER BY id DESC LIMIT ${shown}`;
  const candidates =
    viewerId === undefined
      ? newest
      : Prisma.sql`SELECT c.* FROM ((${newest}) UNION
          (SELECT id, emoji, account_id FROM reactions WHERE note_id = ${noteId} AND account_id = ${viewerId})) c
        ORDER BY c.account_id = ${viewerId} DESC, c.id DESC LIMIT ${shown}`;
  return Prisma.sql`COALESCE((SELECT json_agg(json_build_object('emoji', s.emoji, 'reacted_by', s.account_id::text)
    ORDER BY s.id DESC) FROM (${candidates}) s), '[]')`;
}

/** The notes `page` selects, each as the FullNote JSON fullNoteView would give it for this caller. */
export const fullNotesJson: NoteLoader<FullNoteJson> = async (ctx, page) => {
  const viewerId = optionalAccount(ctx)?.id;
  const rows = await queryRows<{ note: FullNoteJson }>(
    ctx.db,
    // json_strip_nulls drops the members a note does not have (send_to, renote_id, reply_to, an
    // attachment's blur); no member of the shape is null otherwise. A note without reactions (no
    // counts) skips their lookup: most notes, at 12 µs each.
    Prisma.sql`
    WITH page AS (${page})
    SELECT json_strip_nulls(json_build_object(
      'id', p.id::text, 'content', p.content, 'cw_comment', p.cw_comment, 'visibility', p.visibility,
      'send_to', p.send_to_id::text,
      'created_at', ${isoTimeSql(Prisma.sql`p.created_at`)},
      'attachment_files', COALESCE((SELECT json_agg(json_build_object('id', f.id::text, 'filename', f.name,
          'content_type', f.mime, 'url', ${fileUrlSql(ctx.config, Prisma.sql`f.id`)}, 'blur', NULLIF(f.blurhash, ''),
          'nsfw', f.nsfw) ORDER BY x.position)
        FROM note_attachments x JOIN drive_files f ON f.id = x.file_id WHERE x.note_id = p.id), '[]'),
      'renote_id', p.renote_id::text, 'reply_to', p.reply_to_id::text,
      'reactions', CASE WHEN c.total IS NULL THEN '[]'::json ELSE ${shownReactionsSql(Prisma.sql`p.id`, viewerId)} END,
      'reaction_count', COALESCE(c.total, 0), 'reaction_counts', COALESCE(c.counts, '{}'),
      'author', json_build_object('id', a.id::text, 'name', '@' || a.name || '@' || ${ctx.config.localHost},
        'display_name', a.nickname, 'bio', a.bio, 'avatar', ${fileUrlSql(ctx.config, Prisma.sql`a.avatar_file_id`)},
        'header', ${fileUrlSql(ctx.config, Prisma.sql`a.header_file_id`)}, 'followed_count', a.followers_count,
        'following_count', a.following_count)
    ))::text AS note
    FROM page p JOIN accounts a ON a.id = p.author_id
    LEFT JOIN LATERAL (
      SELECT sum(e.total) AS total, json_object_agg(e.emoji, e.total) AS counts
      FROM (${countsByEmoji(Prisma.sql`p.id`)}) e
    ) c ON true
    ORDER BY p.id DESC`,
  );
  return rows.map((row) => row.note);
};

/** A JSON array of notes as fullNotesJson wrote them. */
export function fullNotesArray(notes: FullNoteJson[]): string {
  return `[${notes.join(",")}]`;
}
