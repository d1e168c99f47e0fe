// Searches with Meilisearch that fails, hangs or answers what cannot be trusted
// (docs/faults.md#search), against the real PostgreSQL and an HTTP server answering as Meilisearch
// 1.18 answers (test/support/meilisearch-answers.ts): the notes a search finds are always
// PostgreSQL's, a Meilisearch that hangs stops being asked, a capped or merged answer is not used,
// a long query counts few grams, /readyz stays 200, and murmur_search_index_queries_total says what
// happened.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Context } from "../src/domain/context.ts";
import { FOLDING_VERSION } from "../src/domain/search/fold.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import {
  CANDIDATES,
  createMeilisearchIndex,
  MAX_COUNTED,
  MAX_QUERY_WORDS,
  type SearchIndex,
  settingsDiff,
} from "../src/search/meilisearch.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import {
  indexSettings,
  type MeiliAnswer,
  type MeiliAnswers,
  type MeiliQuery,
  type MeiliRequest,
  meiliError,
  searchResult,
  startMeiliAnswers,
} from "./support/meilisearch-answers.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const INDEX = "notes_read";
const GENERATION = "generation-read";
const MARKER = { id: "generation", ms: -1, grams: "", generation: GENERATION, folding: FOLDING_VERSION };

/** What the index holds, as the test says it: Meilisearch's answers are shaped from it. */
interface Scenario {
  /** The notes holding every gram a search asks, newest first. */
  matched: bigint[];
  /** Settings as GET /settings answers them (changes to Murmur's). */
  settings: Record<string, unknown>;
  /** What the searches themselves are capped by, and distinct on. */
  maxTotalHits: number;
  distinct?: string;
  /** A gram's number of notes, for term counts. */
  count: (token: string) => number;
  multiSearch?: MeiliAnswer;
  version?: MeiliAnswer;
}

let scenario: Scenario;
const fresh = (): Scenario => ({ matched: [], settings: {}, maxTotalHits: CANDIDATES + 1, count: () => 5 });

function answer(request: MeiliRequest): MeiliAnswer | undefined {
  if (request.path === "/version" && scenario.version) return scenario.version;
  if (request.path === `/indexes/${INDEX}/settings`) return { status: 200, body: indexSettings(scenario.settings) };
  if (request.path === `/indexes/${INDEX}/documents/generation`) return { status: 200, body: MARKER };
  if (request.path !== "/multi-search") return undefined;
  if (scenario.multiSearch) return scenario.multiSearch;
  const caps = { maxTotalHits: scenario.maxTotalHits };
  const results = (request.body.queries as MeiliQuery[]).map((query) => {
    if (query.filter === "ms < 0") return searchResult(query, [MARKER], caps);
    if (query.limit === 0) {
      const n = scenario.count(query.q ?? "");
      return { ...searchResult(query, [], caps), estimatedTotalHits: Math.min(n, scenario.maxTotalHits) };
    }
    const docs = scenario.matched.map((id) => ({ id: String(id), ms: Number(id >> 22n), grams: "" }));
    return searchResult(query, docs, { ...caps, distinct: scenario.distinct });
  });
  return { status: 200, body: { results } };
}

describe("searches with Meilisearch answering as it does, or failing", () => {
  let meili: MeiliAnswers;
  let server: TestServer;
  let alice: TestAccount;
  const db = () => server.services.db;

  beforeAll(async () => {
    meili = await startMeiliAnswers(answer);
    server = await startTestServer({ MEILI_URL: meili.url, MEILI_INDEX: INDEX });
    alice = await account(server, "alice");
    await db().searchIndexState.create({
      data: { indexName: INDEX, generation: GENERATION, folding: FOLDING_VERSION },
    });
  });
  afterAll(async () => {
    await server?.close();
    await meili?.close();
  });
  beforeEach(() => {
    scenario = fresh();
    meili.requests.length = 0;
  });

  const ctx = (search: SearchIndex | null = server.services.search!): Context => ({
    ...server.services,
    search: search ?? undefined,
    caller: {},
  });
  const ids = (notes: { id: bigint }[]) => notes.map((n) => String(n.id));
  const postgresOnly = async (query: string) => ids(await searchNotes(ctx(null), query));
  const searches = () => meili.requests.filter((r) => r.path === "/multi-search");

  /** murmur_search_index_queries_total by outcome. */
  async function outcomes(): Promise<Record<string, number>> {
    const metric = server.services.metrics.registry.getSingleMetric("murmur_search_index_queries_total");
    const { values } = await metric!.get();
    return Object.fromEntries(values.map((v) => [v.labels.outcome, v.value]));
  }
  async function counted<T>(run: () => Promise<T>): Promise<Record<string, number>> {
    const before = await outcomes();
    await run();
    const after = await outcomes();
    return Object.fromEntries(
      Object.entries(after)
        .map(([k, v]) => [k, v - (before[k] ?? 0)])
        .filter(([, v]) => v !== 0),
    );
  }

  /** Notes written straight to the database (no outbox row: "in the index"), oldest first. */
  async function notes(contents: string[], visibility: "public" | "followers" = "public"): Promise<bigint[]> {
    const made = contents.map(() => server.services.ids.next());
    await db().note.createMany({
      data: contents.map((content, i) => ({ id: made[i], authorId: BigInt(alice.id), content, visibility })),
    });
    return made;
  }

  it("an answer it can use narrows the search, and the metric says the index was asked", async () => {
    const made = await notes(["narrowword one", "narrowword two"]);
    scenario.matched = [...made].reverse();
    let found: string[] = [];
    expect(
      await counted(async () => {
        found = ids(await searchNotes(ctx(), "narrowword"));
      }),
    ).toEqual({ narrowed: 1 });
    expect(found).toEqual(await postgresOnly("narrowword"));
    expect(found).toHaveLength(2);
    expect(searches()).toHaveLength(1);
  });

  it("a Meilisearch that hangs: each search waits a short timeout, then none asks it until a probe after the circuit's pause", async () => {
    const index = createMeilisearchIndex({ url: meili.url, index: INDEX, halfOpenAfterMs: 300 });
    const made = await notes(["hangword one", "hangword two"]);
    const expected = await postgresOnly("hangword");
    scenario.multiSearch = "hang";
    const during = await counted(async () => {
      for (let i = 0; i < 5; i++) expect(ids(await searchNotes(ctx(index), "hangword"))).toEqual(expected);
    });
    // Three searches asked and gave up (the client aborted them); the next two did not ask.
    expect(searches()).toHaveLength(3);
    await expect.poll(() => meili.abandoned).toBe(3);
    expect(during).toEqual({ failed: 3, circuit_open: 2 });

    // Meilisearch is back: after the pause one search probes it, and it is used again.
    scenario.multiSearch = undefined;
    scenario.matched = [...made].reverse();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await counted(async () => expect(ids(await searchNotes(ctx(index), "hangword"))).toEqual(expected))).toEqual(
      { narrowed: 1 },
    );
  });

  it("a check that Meilisearch does not answer holds the circuit open until one it answers", async () => {
    const index = createMeilisearchIndex({ url: meili.url, index: INDEX, halfOpenAfterMs: 300 });
    const made = await notes(["checkword one"]);
    scenario.matched = made;
    scenario.version = "hang";
    expect(await index.condition()).toMatchObject({ state: "unreachable" });
    // Searches would be answered, but none asks while the check fails.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await counted(() => searchNotes(ctx(index), "checkword"))).toEqual({ circuit_open: 1 });
    expect(searches()).toHaveLength(0);
    scenario.version = undefined;
    expect(await index.condition()).toMatchObject({ state: "present", wrongSettings: [] });
    expect(await counted(() => searchNotes(ctx(index), "checkword"))).toEqual({ narrowed: 1 });
  });

  it("a Meilisearch refusing searches (4xx) is answered by PostgreSQL, and its refusals never open the circuit", async () => {
    const index = createMeilisearchIndex({ url: meili.url, index: INDEX });
    await notes(["refusedword one"]);
    const expected = await postgresOnly("refusedword");
    scenario.multiSearch = meiliError(
      400,
      "invalid_search_filter",
      "invalid_request",
      "Inside `.queries[0]`: Attribute `ms` is not filterable.",
    );
    const run = async () => {
      for (let i = 0; i < 4; i++) expect(ids(await searchNotes(ctx(index), "refusedword"))).toEqual(expected);
    };
    expect(await counted(run)).toEqual({ failed: 4 });
    expect(searches()).toHaveLength(4);
  });

  it("distinctAttribute set behind Murmur's back: its merged answer is not used (two notes of one millisecond)", async () => {
    const [first] = await notes(["distinctword one"]);
    const second = first + 1n; // the same millisecond
    await db().note.create({ data: { id: second, authorId: BigInt(alice.id), content: "distinctword two" } });
    expect(second >> 22n).toBe(first >> 22n);
    scenario.matched = [second, first];
    scenario.settings = { distinctAttribute: "ms" };
    scenario.distinct = "ms";
    let found: string[] = [];
    expect(
      await counted(async () => {
        found = ids(await searchNotes(ctx(), "distinctword"));
      }),
    ).toEqual({ unusable: 1 });
    expect(found).toEqual([String(second), String(first)]);
  });

  it("maxTotalHits lowered: a capped answer is not used, even when the settings read beside it still said 2001", async () => {
    // The newest ten matches are for followers only; an anonymous search finds the five before them.
    const publicOnes = await notes(["cappedword", "cappedword", "cappedword", "cappedword", "cappedword"]);
    const hidden = await notes(Array(10).fill("cappedword"), "followers");
    scenario.matched = [...publicOnes, ...hidden].reverse();
    const expected = await postgresOnly("cappedword");
    expect(expected).toEqual(publicOnes.map(String).reverse());

    scenario.maxTotalHits = 10;
    scenario.settings = { pagination: { maxTotalHits: 10 } };
    expect(await counted(async () => expect(ids(await searchNotes(ctx(), "cappedword"))).toEqual(expected))).toEqual({
      unusable: 1,
    });
    // Lowered between the two reads: the search's own answer says so.
    scenario.settings = {};
    expect(await counted(async () => expect(ids(await searchNotes(ctx(), "cappedword"))).toEqual(expected))).toEqual({
      unusable: 1,
    });
  });

  it("the settings that make hits miss notes are named", () => {
    const wanted = indexSettings();
    expect(settingsDiff(wanted as never)).toEqual([]);
    expect(
      settingsDiff(
        indexSettings({
          distinctAttribute: "ms",
          displayedAttributes: ["ms"],
          stopWords: ["g6162"],
          separatorTokens: ["6"],
          nonSeparatorTokens: [" "],
          dictionary: ["g6162 g6263"],
          localizedAttributes: [{ attributePatterns: ["grams"], locales: ["cmn"] }],
        }) as never,
      ),
    ).toEqual([
      "distinctAttribute",
      "displayedAttributes",
      "stopWords",
      "separatorTokens",
      "nonSeparatorTokens",
      "dictionary",
      "localizedAttributes",
    ]);
  });

  it("a 512-character CJK query counts at most MAX_COUNTED grams, in one request, once", async () => {
    const query = Array.from({ length: 512 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join("");
    scenario.count = (token) => (parseInt(token.slice(-2), 16) % 50) + 1;
    expect(await counted(() => searchNotes(ctx(), query))).toEqual({ narrowed: 1 });
    const [counts, search, ...more] = searches();
    expect(more).toEqual([]);
    const countQueries = counts.body.queries as MeiliQuery[];
    expect(countQueries.every((q) => q.limit === 0)).toBe(true);
    expect(countQueries.length).toBeLessThanOrEqual(MAX_COUNTED);
    expect((search.body.queries[0].q as string).split(" ").length).toBe(MAX_QUERY_WORDS);
    // Counted once: the next search asks only for candidates.
    meili.requests.length = 0;
    await searchNotes(ctx(), query);
    expect(searches()).toHaveLength(1);
  });

  it("/readyz stays 200 while Meilisearch hangs, and says so in checks.search", async () => {
    scenario.version = "hang";
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: "ready",
      checks: { database: "up", storage: "up", search: "down" },
      search: { index: "incomplete" },
    });
    scenario.version = undefined;
    const back = await server.request("GET", "/readyz");
    expect(back.body.checks.search).toBe("up");
  });
});
