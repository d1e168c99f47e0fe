// Searching notes (spec 4.7; CONTRACT 8): the query language over the notes the caller may
// see, newest first, at most 100 a page. Meilisearch, when configured, only narrows the
// candidates: PostgreSQL always applies the exact query and the visibility rule, so both
// backends return the same notes.
import type { Prisma } from "../../db/client.ts";
import { indexCandidates } from "../../search/candidates.ts";
import { compileSearch, fromNames, phraseCandidates } from "../../search/postgres.ts";
import { parseSearchQuery } from "../../search/query.ts";
import { checkStorable, keyOf, localNameOf } from "../accounts/rules.ts";
import type { Context } from "../context.ts";
import { NOTE_INCLUDE, type NoteView } from "../notes/service.ts";
import { visibleTo } from "../notes/visibility.ts";
import { olderThan, parseBeforeId } from "../paging.ts";
import { withReactions } from "../reactions/shown.ts";
import { optionalAccount } from "../sessions/caller.ts";

export const SEARCH_PAGE = 100;

export async function searchNotes(
  ctx: Context,
  query: string,
  beforeId?: string,
  /** Notes per page, at most SEARCH_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = SEARCH_PAGE,
): Promise<NoteView[]> {
  const viewer = optionalAccount(ctx);
  checkStorable(query);
  const tree = parseSearchQuery(query);
  const before = parseBeforeId(beforeId);

  const names = fromNames(tree);
  const keys = new Map(names.map((name) => [name, localNameOf(name, ctx.config.localHost)]));
  const wanted = [...new Set([...keys.values()].filter((n): n is string => n !== undefined).map(keyOf))];
  const accounts = wanted.length
    ? await ctx.db.account.findMany({ where: { nameKey: { in: wanted } }, select: { id: true, nameKey: true } })
    : [];
  const idByKey = new Map(accounts.map((a) => [a.nameKey, a.id]));
  const authors = new Map(names.map((name) => [name, idByKey.get(keyOf(keys.get(name) ?? ""))]));

  const where: Prisma.NoteWhereInput[] = [visibleTo(viewer), compileSearch(tree, authors), olderThan(before)];
  // An index that cannot answer only means PostgreSQL answers alone.
  const [candidates, phrased] = await Promise.all([
    indexCandidates(ctx, tree, before).catch((err) => {
      ctx.log.warn({ err }, "search index unavailable; searching PostgreSQL alone");
      return undefined;
    }),
    phraseCandidates(ctx.db, tree),
  ]);
  if (candidates) where.push({ id: { in: candidates } });
  if (phrased) where.push({ id: { in: phrased } });
  const notes = await ctx.db.note.findMany({
    where: { AND: where },
    orderBy: { id: "desc" },
    take: Math.min(limit, SEARCH_PAGE + 1),
    include: NOTE_INCLUDE,
    // Matches come from a bitmap scan and are sorted afterwards: joined relations would be
    // built for every match before the limit (2,809 for one keyword, 187 ms against 40 ms).
    relationLoadStrategy: "query",
  });
  return withReactions(ctx, notes);
}
