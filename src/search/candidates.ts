// Which notes a search may consider when Meilisearch narrows it: the index's hits, joined with
// the notes still waiting in the outbox (written but not yet indexed, or set aside), so a note
// is found the moment its POST returns. PostgreSQL answers alone (undefined) when the index
// cannot narrow the query, when its marker is not the one PostgreSQL holds, or when the backlog
// is too large to join.
import type { Db } from "../db/client.ts";
import type { Context } from "../domain/context.ts";
import { FOLDING_VERSION } from "./fold.ts";
import type { Marker } from "./meilisearch.ts";
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

export async function indexCandidates(
  ctx: Context,
  tree: SearchNode,
  before: bigint | undefined,
): Promise<bigint[] | undefined> {
  const search = ctx.search;
  if (!search || !requiredTerms(tree)) return undefined;
  const { marker, pending } = await indexState(ctx.db, search.name);
  if (!marker || !pending) return undefined;
  const hits = await search.candidates(tree, before, marker);
  return hits && [...new Set([...hits, ...pending])];
}
