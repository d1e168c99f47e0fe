// Bookmarks (docs/notes.md#bookmarks): idempotent, and paged like a timeline (extension).
import { foreignKeyViolation } from "../../db/client.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { findVisibleNote, NOTE_INCLUDE, type NoteView } from "../notes/service.ts";
import { visibleTo } from "../notes/visibility.ts";
import { olderThan, parseBeforeId } from "../paging.ts";
import { withReactions } from "../reactions/shown.ts";
import { requireAccount } from "../sessions/caller.ts";

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
  const before = parseBeforeId(beforeId);
  const notes = await ctx.db.note.findMany({
    where: { ...visibleTo(caller), bookmarks: { some: { accountId: caller.id } }, ...olderThan(before) },
    orderBy: { id: "desc" },
    take: Math.min(limit, PAGE + 1),
    include: NOTE_INCLUDE,
  });
  return await withReactions(ctx, notes);
}
