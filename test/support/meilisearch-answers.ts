// An HTTP server that answers Murmur's requests as Meilisearch 1.18 answers them in a scenario
// the test names (which notes hold the grams asked, which settings the index has), or fails as
// Meilisearch fails: its errors are `{message, code, type, link}` with its status
// (crates/meilisearch-types/src/error.rs), and "hang" holds the request unanswered. It searches
// nothing: the test says what the search found, and the server shapes it as Meilisearch would
// (crates/meilisearch/src/search/mod.rs: maxTotalHits caps `limit`, `offset` and
// estimatedTotalHits; a distinct attribute keeps one document per value).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface MeiliRequest {
  method: string;
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON as sent
  body: any;
}

export type MeiliAnswer = { status: number; body: unknown } | "hang";

export interface MeiliQuery {
  indexUid: string;
  q?: string;
  filter?: string;
  limit?: number;
  offset?: number;
  attributesToRetrieve?: string[];
}

/** A search as Meilisearch 1.18 answers it, given the documents that matched (newest first). */
export function searchResult(
  query: MeiliQuery,
  matched: Record<string, unknown>[],
  { maxTotalHits = 1000, distinct }: { maxTotalHits?: number; distinct?: string } = {},
) {
  let found = matched;
  if (distinct) {
    const seen = new Set<unknown>();
    found = matched.filter((doc) => !seen.has(doc[distinct]) && seen.add(doc[distinct]));
  }
  const offset = Math.min(query.offset ?? 0, maxTotalHits);
  const limit = Math.min(query.limit ?? 20, maxTotalHits - offset);
  const keep = query.attributesToRetrieve;
  const hits = found
    .slice(offset, offset + limit)
    .map((doc) => (keep ? Object.fromEntries(keep.filter((k) => k in doc).map((k) => [k, doc[k]])) : doc));
  return {
    indexUid: query.indexUid,
    hits,
    query: query.q ?? "",
    processingTimeMs: 0,
    // As Meilisearch answers them: the limit asked, the offset applied.
    limit: query.limit ?? 20,
    offset,
    estimatedTotalHits: Math.min(found.length, maxTotalHits),
  };
}

/** GET /indexes/{uid}/settings of an index as Murmur sets it, with `changes`. */
export function indexSettings(changes: Record<string, unknown> = {}) {
  return {
    displayedAttributes: ["*"],
    searchableAttributes: ["grams"],
    filterableAttributes: ["ms"],
    sortableAttributes: ["ms"],
    rankingRules: ["sort", "words", "exactness"],
    stopWords: [],
    nonSeparatorTokens: [],
    separatorTokens: [],
    dictionary: [],
    synonyms: {},
    distinctAttribute: null,
    proximityPrecision: "byWord",
    typoTolerance: {
      enabled: false,
      minWordSizeForTypos: { oneTypo: 5, twoTypos: 9 },
      disableOnWords: [],
      disableOnAttributes: [],
      disableOnNumbers: false,
    },
    faceting: { maxValuesPerFacet: 100, sortFacetValuesBy: { "*": "alpha" } },
    pagination: { maxTotalHits: 2001 },
    embedders: {},
    searchCutoffMs: null,
    localizedAttributes: null,
    facetSearch: true,
    prefixSearch: "indexingTime",
    ...changes,
  };
}

/** A Meilisearch error as it answers one. */
export function meiliError(status: number, code: string, type: string, message: string): MeiliAnswer {
  return { status, body: { message, code, type, link: `https://docs.meilisearch.com/errors#${code}` } };
}

export interface MeiliAnswers {
  url: string;
  requests: MeiliRequest[];
  /** Requests the client gave up on before they were answered. */
  abandoned: number;
  close(): Promise<void>;
}

/**
 * Starts the server: `answer` says what each request gets; undefined leaves it to the defaults
 * (the version, `indexSettings()`, and 404 index_not_found for anything else).
 */
export async function startMeiliAnswers(
  answer: (request: MeiliRequest) => MeiliAnswer | undefined,
): Promise<MeiliAnswers> {
  const requests: MeiliRequest[] = [];
  const held = new Set<http.ServerResponse>();
  const state: MeiliAnswers = {
    url: "",
    requests,
    abandoned: 0,
    close: async () => {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const request: MeiliRequest = {
      method: req.method ?? "GET",
      path: new URL(req.url ?? "/", "http://x").pathname,
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(request);
    const given = answer(request) ?? defaults(request);
    if (given === "hang") {
      held.add(res);
      res.on("close", () => {
        held.delete(res);
        if (!res.writableEnded) state.abandoned += 1;
      });
      return;
    }
    res.writeHead(given.status, { "content-type": "application/json" });
    res.end(JSON.stringify(given.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function defaults(request: MeiliRequest): MeiliAnswer {
  if (request.path === "/version")
    return { status: 200, body: { commitSha: "unknown", commitDate: "unknown", pkgVersion: "1.18.0" } };
  if (/^\/indexes\/[^/]+\/settings$/.test(request.path)) return { status: 200, body: indexSettings() };
  const index = /^\/indexes\/([^/]+)/.exec(request.path)?.[1] ?? "";
  return meiliError(404, "index_not_found", "invalid_request", `Index \`${index}\` not found.`);
}
