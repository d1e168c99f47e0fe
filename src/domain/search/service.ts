// Searching notes (docs/search.md): the query language over the notes the caller may
// see, newest first, at most 100 a page. Meilisearch, when configured, only narrows the
// candidates: PostgreSQL always applies the exact query and the visibility rule, so both
// backends return the same notes. Notes by authors the caller muted are left out
// (docs/accounts.md#mutes).
import { Prisma, queryRows } from "../../db/client.ts";
import { snowflakeAt } from "../../db/snowflake.ts";
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
import { parseSearchQuery, type SearchNode } from "./query.ts";
import {
  claimLearning,
  forgetMatches,
  forgetWindow,
  learnMatches,
  learnWindow,
  MATCHES,
  type Matches,
  matchesOf,
  SETTLING_MS,
  windowOf,
} from "./window.ts";

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
  const condition = compileSearchSql(tree, authors);
  const conditions = [audienceSql(viewer)];
  // Other servers' notes are found as moderators' policies let them (docs/federation.md#moderation).
  const unsilenced = await unsilencedSql(ctx, viewer);
  if (unsilenced) conditions.push(unsilenced);
  if (before !== undefined) conditions.push(Prisma.sql`n.id < ${before}`);
  for (const ids of [candidates, phrased]) if (ids) conditions.push(Prisma.sql`n.id = ANY(${ids}::bigint[])`);
  const take = Math.max(1, Math.min(Math.trunc(limit), SEARCH_PAGE + 1));
  const viewing = Prisma.sql`${Prisma.join(conditions, " AND ")} ${unfrozenSql(viewer)} ${unmutedSql(viewer)}`;
  const where = Prisma.sql`${condition} AND ${viewing}`;
  // A window only narrows what the trigram indexes found; candidates are few already.
  const from = candidates || phrased ? undefined : windowOf(query);
  const found =
    from !== undefined && (before === undefined || before > from)
      ? await windowed(ctx, query, { tree, authors, condition, viewing }, take, from, before)
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

/** A search's query, its condition (`from:` names resolved to `authors`) and the caller's view. */
interface Conditions {
  tree: SearchNode;
  authors: Map<string, bigint | undefined>;
  condition: Prisma.Sql;
  viewing: Prisma.Sql;
}

/**
 * The same, from the matches learned of `query` when they hold a page, else from the notes past
 * `from`, and the older ones only if those fall short: two statements then, where one statement
 * of both parts (UNION ALL, the second never run when the first gave a page) had PostgreSQL plan
 * both each time, and planning a pattern's part costs ~0.5 ms (its estimate reads content's
 * statistics). A window that held a page learns its matches, for the searches after.
 */
async function windowed(
  ctx: Context,
  query: string,
  { tree, authors, condition, viewing }: Conditions,
  take: number,
  from: bigint,
  before: bigint | undefined,
) {
  const resolved = [...authors.values()].join();
  const matches = matchesOf(query, resolved);
  if (matches && (before === undefined || before > matches.floor)) {
    // The patterns out of the planner's sight: its estimate of one reads content's statistics
    // (~1 ms), and the plan here is the ids' whatever the pattern.
    const found = await remembered(
      ctx,
      Prisma.sql`${compileSearchSql(tree, authors, false)} AND ${viewing}`,
      take,
      matches,
    );
    if (found) return found;
    forgetMatches(query);
  }
  const where = Prisma.sql`${condition} AND ${viewing}`;
  const part = (range: Prisma.Sql, limit: number) =>
    queryRows<{ id: bigint }>(
      ctx.db,
      Prisma.sql`SELECT n.id FROM notes n WHERE ${where} AND ${range} ORDER BY n.id DESC LIMIT ${Prisma.raw(String(limit))}`,
    );
  const newest = await part(Prisma.sql`n.id >= ${from}`, take);
  if (newest.length === take) {
    if (!matches && claimLearning(query)) {
      let learned: Matches | undefined;
      try {
        learned = await learn(ctx, condition, resolved, from);
      } finally {
        learnMatches(query, learned);
      }
    }
    return newest;
  }
  forgetWindow(query);
  return [...newest, ...(await part(Prisma.sql`n.id < ${from}`, take - newest.length))];
}

/**
 * The newest `take` notes for which `where` holds among `matches` and the notes written or edited
 * since they were learned, or undefined when those fall short of a page (notes deleted, edited,
 * out of the caller's view): an index scan of the primary key for a few hundred ids, where the
 * window's was of tens of thousands ANDed with the trigram indexes' bitmaps.
 */
async function remembered(ctx: Context, where: Prisma.Sql, take: number, matches: Matches) {
  const found = await queryRows<{ id: bigint }>(
    ctx.db,
    Prisma.sql`SELECT n.id FROM notes n
      WHERE (n.id = ANY(${matches.ids}::bigint[]) OR n.id > ${matches.since} OR n.edited_at >= ${matches.editedSince})
        AND n.id >= ${matches.floor} AND ${where}
      ORDER BY n.id DESC LIMIT ${Prisma.raw(String(take))}`,
  );
  return found.length === take ? found : undefined;
}

/**
 * The newest MATCHES notes past `from` that `condition` holds for, whoever may see them, and what
 * is written after: the newest id then, and the database's clock, less SETTLING_MS.
 */
async function learn(
  ctx: Context,
  condition: Prisma.Sql,
  resolved: string,
  from: bigint,
): Promise<Matches | undefined> {
  const rows = await queryRows<{ id: bigint; edited_since: Date; newest: bigint }>(
    ctx.db,
    Prisma.sql`SELECT n.id, now() - make_interval(secs => ${SETTLING_MS / 1000}) AS edited_since,
        (SELECT max(id) FROM notes) AS newest
      FROM notes n WHERE ${condition} AND n.id >= ${from} ORDER BY n.id DESC LIMIT ${Prisma.raw(String(MATCHES))}`,
  );
  if (rows.length === 0) return undefined;
  const ids = rows.map((row) => row.id);
  // Ids minted by this service's generators carry their time; any other id is past the newest.
  const minted = snowflakeAt(Date.now() - SETTLING_MS);
  return {
    resolved,
    ids,
    floor: ids.length === MATCHES ? ids[ids.length - 1] : from,
    since: rows[0].newest < minted ? rows[0].newest : minted,
    editedSince: rows[0].edited_since,
  };
}
