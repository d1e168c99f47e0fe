// What a search asks of a search index (src/search/meilisearch.ts is one): the notes that may
// match, which PostgreSQL then searches exactly (src/domain/search/candidates.ts).
import type { SearchNode } from "./query.ts";

/**
 * The completeness marker: written into the index by a rebuild (as one document no query
 * matches) and into PostgreSQL once every note reached it. The index narrows searches only while
 * both say the same generation, and it was folded the way this code folds.
 */
export interface Marker {
  generation: string;
  folding: number;
}

/**
 * What became of a search's use of the index: its candidates narrowed the search; too many hits;
 * an answer that could not be trusted (another marker, settings or a capped answer); Meilisearch
 * failed or did not answer in time; not asked because the circuit is open, or because the query,
 * the marker or the backlog leave nothing to ask. PostgreSQL answers alone in all but the first.
 */
export type IndexOutcome = "narrowed" | "too_many" | "unusable" | "failed" | "circuit_open" | "not_asked";

export interface SearchNarrowing {
  readonly name: string;
  /**
   * The ids that may match, or undefined when the index cannot narrow this query: a query it
   * cannot narrow, too many hits, or an index whose marker is not `expected`.
   */
  candidates(
    tree: SearchNode,
    before: bigint | undefined,
    expected: Marker,
    /** Told why the answer is what it is, when Meilisearch answered. */
    said?: (outcome: IndexOutcome) => void,
  ): Promise<bigint[] | undefined>;
}
