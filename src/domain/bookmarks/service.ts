// Bookmarks (docs/notes.md#bookmarks): idempotent, and paged like a timeline (extension).
import { foreignKeyViolation, Prisma } from "../../db/client.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { findVisibleNote, type NoteView } from "../notes/service.ts";
import { audienceSql, unfrozenSql } from "../notes/visibility.ts";
import { requireAccount } from "../sessions/caller.ts";
import { notesWhere } from "../timelines/page.ts";

export const PAGE = 20;

export async function bookmark(ctx: Context, noteId: string): Promise<NoteView> {
  const caller = requireAccount(ctx);
  const note = await findVisibleNote(ctx, noteId);
  await ctx.db.bookmark
    .createMany({ data: [{ accountId: caller.id, noteId: note.id }], skipDuplicates: true })
    .catch((err) => {
      if (foreignKeyViolation(err)) throw new DomainError("NOTE_NOT_FOUND"); // deleted meanwhile
      throw err;
    });
  return note;
}

export async function unbookmark(ctx: Context, noteId: string): Promise<void> {
  const caller = requireAccount(ctx);
  const note = await findVisibleNote(ctx, noteId);
  await ctx.db.bookmark.deleteMany({ where: { accountId: caller.id, noteId: note.id } });
}

/**
 * The caller's bookmarked notes it may still see, newest note first, 20 a page, paged by
 * `beforeId` (docs/timelines.md#paging).
 */
/** `limit`: notes per page, at most PAGE + 1 (GraphQL asks one more to know if there is a next page). */
export async function listBookmarks(ctx: Context, beforeId?: string, limit = PAGE): Promise<NoteView[]> {
  const caller = requireAccount(ctx);
  return notesWhere(
    ctx,
    Prisma.sql`EXISTS (SELECT FROM bookmarks b WHERE b.account_id = ${caller.id} AND b.note_id = n.id)
      AND ${audienceSql(caller)} ${unfrozenSql(caller)}`,
    { beforeId, limit },
  );
}
