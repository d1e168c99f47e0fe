// Search on each backend, in this process, on the seeded million notes: PostgreSQL alone always;
// Meilisearch too where MEILI_URL is set (a fresh index of the bench's own, rebuilt from the
// seeded notes, then deleted). Each query runs one at a time, so the figures are latencies.
import { Meilisearch } from "meilisearch";
import type { Config } from "../src/config.ts";
import type { Context } from "../src/domain/context.ts";
import { indexCandidates } from "../src/domain/search/candidates.ts";
import { parseSearchQuery } from "../src/domain/search/query.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { createMeilisearchIndex } from "../src/search/meilisearch.ts";
import { rebuildSearchIndex } from "../src/search/rebuild.ts";

/** A word of the seeded vocabulary (md5 of "5"), and another (md5 of "1"). */
export const KEYWORD = "e4da3b";
export const OTHER_KEYWORD = "c4ca42";

export interface QueryFigures {
  p50: number;
  p99: number;
  found: number;
  /** Whether Meilisearch narrowed the query (PostgreSQL alone otherwise). */
  narrowed: boolean;
}

export type SearchFigures = Record<"postgresql" | "meilisearch", Record<string, QueryFigures>> & {
  meilisearchRebuildSeconds?: number;
};

async function figures(ctx: Context, queries: string[], rounds: number): Promise<Record<string, QueryFigures>> {
  const result: Record<string, QueryFigures> = {};
  for (const query of queries) {
    const times: number[] = [];
    let found = 0;
    for (let i = 0; i < rounds + 3; i++) {
      const started = performance.now();
      found = (await searchNotes(ctx, query)).length;
      if (i >= 3) times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 10) / 10;
    const narrowed =
      (await indexCandidates(ctx, parseSearchQuery(query), undefined).catch(() => undefined)) !== undefined;
    result[query] = { p50: at(0.5), p99: at(0.99), found, narrowed };
  }
  return result;
}

export async function benchSearch(
  ctx: Context,
  config: Config,
  queries: string[],
  rounds = 40,
): Promise<SearchFigures> {
  const postgresql = await figures({ ...ctx, search: undefined }, queries, rounds);
  if (!config.meili) return { postgresql, meilisearch: {} };
  const index = createMeilisearchIndex({ ...config.meili, index: `murmur_bench_${Date.now()}` });
  try {
    await index.prepare();
    const started = performance.now();
    await rebuildSearchIndex(ctx.db, index);
    const meilisearchRebuildSeconds = Math.round((performance.now() - started) / 100) / 10;
    const meilisearch = await figures({ ...ctx, search: index }, queries, rounds);
    return { postgresql, meilisearch, meilisearchRebuildSeconds };
  } finally {
    await new Meilisearch({ host: config.meili.url, apiKey: config.meili.key })
      .deleteIndex(index.name)
      .waitTask()
      .catch(() => {});
  }
}
