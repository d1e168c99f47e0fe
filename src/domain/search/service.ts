// Searching notes (docs/search.md): the query language over the notes the caller may
// see, newest first, at most 100 a page. Meilisearch, when configured, only narrows the
// candidates: PostgreSQL always applies the exact query and the visibility rule, so both
// backends return the same notes. Notes by authors the caller muted are left out
// (docs/accounts.md#mutes).
import { Prisma, queryRows } from "../../db/client.ts";
import { checkStorable, keyOf, localNameOf } from "../accounts/rules.ts";
import type { Context } from "../context.ts";
import { unsilencedSql } from "../instances/silence.ts";
import type { NoteView } from "../notes/service.ts";
import { audienceSql, unfrozenSql, unmutedSql } from "../notes/visibility.ts";
import { parseBeforeId } from "../paging.ts";
import { optionalAccount } from "../sessions/caller.ts";
import { type NoteLoader, noteViews } from "../timelines/page.ts";
import { indexCandidates } from "./candidates.ts";
import { compileSearchSql, fromNames, phraseCandidates } from "./postgres.ts";
import { parseSearchQuery } from "./query.ts";
import { forgetWindow, learnWindow, windowOf } from "./window.ts";

export const SEARCH_PAGE = 100;

export async function searchNotes<T = NoteView>(
  ctx: Context,
  query: string,
  beforeId?: string,
  /** Notes per page, at most SEARCH_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = SEARCH_PAGE,
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  const viewer = optionalAccount(ctx);
  checkStorable(query);
  const tree = parseSearchQuery(query);
  const before = parseBeforeId(beforeId);

  const names = fromNames(tree);
  const keys = new Map(names.map((name) => [name, localNameOf(name, ctx.config.localHost)]));
  const wanted = [...new Set([...keys.values()].filter((n): n is string => n !== undefined).map(keyOf))];
  const accounts = wanted.length
    ? await ctx.db.account.findMany({
        where: { nameKey: { in: wanted }, deletedAt: null },
        select: { id: true, nameKey: true },
      })
    : [];
  const idByKey = new Map(accounts.map((a) => [a.nameKey, a.id]));
  const authors = new Map(names.map((name) => [name, idByKey.get(keyOf(keys.get(name) ?? ""))]));

  // An index that cannot answer only means PostgreSQL answers alone.
  const [candidates, phrased] = await Promise.all([
    indexCandidates(ctx, tree, before).catch((err) => {
      ctx.log.warn({ err }, "search index unavailable; searching PostgreSQL alone");
      return undefined;
    }),
    phraseCandidates(ctx.db, tree),
  ]);
  const conditions = [compileSearchSql(tree, authors), audienceSql(viewer)];
  // Other servers' notes are found as moderators' policies let them (docs/federation.md#moderation).
  const unsilenced = await unsilencedSql(ctx, viewer);
  if (unsilenced) conditions.push(unsilenced);
  if (before !== undefined) conditions.push(Prisma.sql`n.id < ${before}`);
  for (const ids of [candidates, phrased]) if (ids) conditions.push(Prisma.sql`n.id = ANY(${ids}::bigint[])`);
  const take = Math.max(1, Math.min(Math.trunc(limit), SEARCH_PAGE + 1));
  const where = Prisma.sql`${Prisma.join(conditions, " AND ")} ${unfrozenSql(viewer)} ${unmutedSql(viewer)}`;
  // A window only narrows what the trigram indexes found; candidates are few already.
  const from = candidates || phrased ? undefined : windowOf(query);
  const found =
    from !== undefined && (before === undefined || before > from)
      ? await windowed(ctx, query, where, take, from)
      : await everything(ctx, query, where, take, before === undefined && !candidates && !phrased);
  if (found.length === 0) return [];
  return load(
    ctx,
    Prisma.sql`SELECT n.* FROM notes n WHERE n.id = ANY(${found.map((n) => n.id)}::bigint[]) ORDER BY n.id DESC`,
  );
}

/**
 * The newest `take` notes `n` for which `where` holds; with `learn`, what the window learns of them.
 * The search and the page of what it found are two statements: the search is planned for its
 * pattern each time (src/db/client.ts), the page prepared once per connection. In one, the page's
 * JSON was planned again with every search: most of PostgreSQL's planning time for one.
 */
async function everything(ctx: Context, query: string, where: Prisma.Sql, take: number, learn: boolean) {
  const found = await queryRows<{ id: bigint; matched: bigint }>(
    ctx.db,
    Prisma.sql`SELECT n.id, ${learn ? Prisma.sql`count(*) OVER ()` : Prisma.sql`0::bigint`} AS matched
      FROM notes n WHERE ${where} ORDER BY n.id DESC LIMIT ${Prisma.raw(String(take))}`,
  );
  if (learn && found.length > 0) {
    learnWindow(
      query,
      found.map((n) => n.id),
      take,
      Number(found[0].matched),
    );
  }
  return found;
}

/**
 * The same, from the notes past `from` first, and the older ones only if those fall short: two
 * statements then, where one statement of both parts (UNION ALL, the second never run when the
 * first gave a page) had PostgreSQL plan both each time, and planning a pattern's part costs
 * ~0.5 ms (its estimate reads content's statistics).
 */
async function windowed(ctx: Context, query: string, where: Prisma.Sql, take: number, from: bigint) {
  const part = (range: Prisma.Sql, limit: number) =>
    queryRows<{ id: bigint }>(
      ctx.db,
      Prisma.sql`SELECT n.id FROM notes n WHERE ${where} AND ${range} ORDER BY n.id DESC LIMIT ${Prisma.raw(String(limit))}`,
    );
  const newest = await part(Prisma.sql`n.id >= ${from}`, take);
  if (newest.length === take) return newest;
  forgetWindow(query);
  return [...newest, ...(await part(Prisma.sql`n.id < ${from}`, take - newest.length))];
}
