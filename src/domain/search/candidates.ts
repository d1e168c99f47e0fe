// Which notes a search may consider when Meilisearch narrows it: the index's hits, joined with
// the notes still waiting in the outbox (written but not yet indexed, or set aside), so a note
// is found the moment its POST returns. PostgreSQL answers alone (undefined) when the index
// cannot narrow the query, when its marker is not the one PostgreSQL holds, when the backlog
// is too large to join, or when the database's lower() is not one the index's folding follows.
import { BrokenCircuitError } from "cockatiel";
import type { Db } from "../../db/client.ts";
import type { Context } from "../context.ts";
import { databaseFolding, FOLDING_VERSION } from "./fold.ts";
import type { IndexOutcome, Marker } from "./narrowing.ts";
import { requiredTerms, type SearchNode } from "./query.ts";

/** Most waiting notes joined to the index's hits; past it, PostgreSQL answers alone. */
export const PENDING_MAX = 1000;

/**
 * In one statement, what a search needs of PostgreSQL: the marker the index must carry (none
 * before the first complete rebuild, or when built by another folding), and the notes waiting
 * to be indexed (undefined when more than PENDING_MAX).
 */
export async function indexState(db: Db, indexName: string): Promise<{ marker?: Marker; pending?: bigint[] }> {
  const [row] = await db.$queryRaw<{ generation: string | null; folding: number | null; pending: bigint[] }[]>`
    SELECT s.generation, s.folding,
      ARRAY(SELECT target_id FROM search_outbox WHERE op = 'upsert' LIMIT ${PENDING_MAX + 1}) AS pending
    FROM (SELECT) AS one LEFT JOIN search_index_state s ON s.index_name = ${indexName}`;
  return {
    marker:
      row.generation && row.folding === FOLDING_VERSION
        ? { generation: row.generation, folding: FOLDING_VERSION }
        : undefined,
    pending: row.pending.length > PENDING_MAX ? undefined : row.pending,
  };
}

const foldingSaid = new WeakSet<Db>();

export async function indexCandidates(
  ctx: Context,
  tree: SearchNode,
  before: bigint | undefined,
): Promise<bigint[] | undefined> {
  const search = ctx.search;
  if (!search) return undefined;
  let outcome: IndexOutcome = "not_asked";
  try {
    if (!requiredTerms(tree)) return undefined;
    // An index folded otherwise than this database's ILIKE would hide notes: never used, said once.
    const refused = await databaseFolding(ctx.db);
    if (refused) {
      if (!foldingSaid.has(ctx.db))
        ctx.log.error(`search index not used, PostgreSQL answers searches alone: ${refused}`);
      foldingSaid.add(ctx.db);
      return undefined;
    }
    const { marker, pending } = await indexState(ctx.db, search.name);
    if (!marker || !pending) return undefined;
    const hits = await search.candidates(tree, before, marker, (said) => {
      outcome = said;
    });
    return hits && [...new Set([...hits, ...pending])];
  } catch (err) {
    // An open circuit is no news: PostgreSQL answers alone without a word.
    if (err instanceof BrokenCircuitError) {
      outcome = "circuit_open";
      return undefined;
    }
    outcome = "failed";
    throw err;
  } finally {
    ctx.metrics.searchIndexQuery(outcome);
  }
}
