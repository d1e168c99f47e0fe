// Search latency on the seeded database, PostgreSQL backend: keyword, phrase and boolean queries.
import { createHash } from "node:crypto";
import type { BenchServer } from "./server.ts";
import { type Latency, measure } from "./timelines.ts";

/** The seeded vocabulary's word for `n` (see WORD in timelines.ts). */
const word = (n: number) => createHash("md5").update(String(n)).digest("hex").slice(0, 6);

export const SEARCH_QUERIES: Record<string, string> = {
  keyword: word(5),
  phrase: `"${word(5)} ${word(5)}"`,
  "boolean (a b OR c -d)": `${word(7)} seeded OR ${word(11)} -${word(13)}`,
  "from: + keyword": `from:seed9 ${word(8)}`,
};

export interface SearchFigures {
  hits: number;
  /** One client at a time: the latency of a search itself. */
  single: Latency;
  /** Eight concurrent clients: throughput, and latency with queueing on 2 cores. */
  loaded: Latency;
}

export async function benchSearch(server: BenchServer): Promise<Record<string, SearchFigures>> {
  const figures: Record<string, SearchFigures> = {};
  for (const [name, query] of Object.entries(SEARCH_QUERIES)) {
    const url = `${server.url}/search/notes?query=${encodeURIComponent(query)}`;
    const hits = (
      (await (await fetch(url, { headers: { authorization: `Bearer ${server.token}` } })).json()) as unknown[]
    ).length;
    await measure(url, server.token, 20);
    figures[name] = {
      hits,
      single: await measure(url, server.token, 100, 1),
      loaded: await measure(url, server.token, 200),
    };
  }
  return figures;
}
