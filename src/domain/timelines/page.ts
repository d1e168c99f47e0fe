// One page of notes for any timeline: the scope, the one visibility rule, the filters and
// paging by id, newest first, in a fixed number of queries.
import type { Prisma } from "../../db/client.ts";
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
