// The index's cases (docs/search.md#backends) against a real Meilisearch (they run where MEILI_URL
// is set; never a fake): case folding as PostgreSQL folds, a note found the moment its POST
// returns, an index that starts empty, a reindex racing a transaction held open, payloads over
// Meilisearch's request limit, an account freeze over many notes, a rare term after ten common
// grams, and a maxTotalHits lowered behind Murmur's back, and paging by before_id. Every search
// case also checks that the index was asked, that its candidates hold every note PostgreSQL finds
// for a moderator, and that the HTTP answers were narrowed by it
// (murmur_search_index_queries_total): an answer of PostgreSQL alone, which is also right, fails
// them.
import { Meilisearch } from "meilisearch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Services } from "../src/domain/context.ts";
import { indexCandidates } from "../src/domain/search/candidates.ts";
import { parseSearchQuery } from "../src/domain/search/query.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { createLogger } from "../src/log.ts";
import { createMeilisearchIndex, type SearchIndex } from "../src/search/meilisearch.ts";
import { rebuildSearchIndex, searchIndexCompleteness, storedMarker } from "../src/search/rebuild.ts";
import { startSearchSync } from "../src/search/sync.ts";
import { SearchWorker } from "../src/search/worker.ts";
import { moderate, post } from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { holdOpen } from "./support/held-transaction.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const MEILI_URL = process.env.MEILI_URL;
const MEILI_KEY = process.env.MEILI_KEY;
if (!MEILI_URL)
  console.log("Meilisearch cases (docs/search.md#backends) SKIPPED: set MEILI_URL (and MEILI_KEY) to run them");

const logger = createLogger("silent");
const run = Date.now();

describe.skipIf(!MEILI_URL)("Meilisearch: the index's cases (docs/search.md#backends)", () => {
  let server: TestServer;
  let alice: TestAccount;
  let icy: TestAccount;
  let mod: TestAccount;
  const created: string[] = [];
  const db = () => server.services.db;
  const index = () => server.services.search!;
  const meili = () => new Meilisearch({ host: MEILI_URL ?? "", apiKey: MEILI_KEY });

  beforeAll(async () => {
    const name = `notes_i15_${run}`;
    created.push(name);
    server = await startTestServer({ MEILI_URL: MEILI_URL ?? "", MEILI_KEY: MEILI_KEY ?? "", MEILI_INDEX: name });
    await index().prepare();
    await rebuildSearchIndex(db(), index());
    [alice, icy, mod] = await Promise.all([
      account(server, "alice"),
      account(server, "icy"),
      account(server, "mod", "moderator"),
    ]);
  }, 120_000);
  afterAll(async () => {
    for (const name of created)
      await meili()
        .deleteIndex(name)
        .waitTask()
        .catch(() => {});
    await server?.close();
  });

  async function drain(search: SearchIndex = index()) {
    const worker = new SearchWorker(db(), search, logger);
    for (let round = 0; round < 1000 && (await worker.drainOnce()) > 0; round++);
  }

  /** What PostgreSQL alone finds for `who` (a moderator by default: every note; null: anonymous). */
  async function postgresOnly(query: string, who: TestAccount | null = mod, beforeId?: string): Promise<string[]> {
    const viewer = who ? await db().account.findUniqueOrThrow({ where: { id: BigInt(who.id) } }) : undefined;
    const notes = await searchNotes(
      { ...server.services, search: undefined, caller: { account: viewer } },
      query,
      beforeId,
    );
    return notes.map((n) => n.id.toString());
  }

  async function found(query: string, who?: TestAccount, beforeId?: string): Promise<string[]> {
    const params = new URLSearchParams({ query, ...(beforeId ? { before_id: beforeId } : {}) });
    const answer = await server.request("GET", `/search/notes?${params}`, { token: who?.token });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.map((n: { id: string }) => n.id);
  }

  /** Searches Meilisearch narrowed (murmur_search_index_queries_total{outcome="narrowed"}). */
  async function narrowedCount(): Promise<number> {
    const metric = server.services.metrics.registry.getSingleMetric("murmur_search_index_queries_total");
    const { values } = (await metric?.get()) ?? { values: [] };
    return values.find((v) => v.labels.outcome === "narrowed")?.value ?? 0;
  }

  /** found(), which Meilisearch must have narrowed: an answer of PostgreSQL alone fails the test. */
  async function foundThroughIndex(query: string, who?: TestAccount, beforeId?: string): Promise<string[]> {
    const before = await narrowedCount();
    const ids = await found(query, who, beforeId);
    expect(await narrowedCount(), `${query}: Meilisearch was not consulted`).toBe(before + 1);
    return ids;
  }

  /** The index narrows `query` to a superset of PostgreSQL's matches, and the answers agree. */
  async function expectNarrowed(query: string, search: SearchIndex = index()): Promise<bigint[]> {
    const marker = await storedMarker(db(), search.name);
    expect(marker, "no complete rebuild").toBeDefined();
    const candidates = await search.candidates(parseSearchQuery(query), undefined, marker!);
    expect(candidates, `${query}: the index did not narrow`).toBeDefined();
    const held = new Set(candidates!.map(String));
    for (const id of await postgresOnly(query)) expect(held.has(id), `${query}: ${id} missing`).toBe(true);
    expect(await foundThroughIndex(query, mod)).toEqual(await postgresOnly(query));
    expect(await foundThroughIndex(query)).toEqual(await postgresOnly(query, null));
    return candidates!;
  }

  /** Notes written straight to the database with their outbox rows, as many as `contents`. */
  async function bulk(who: TestAccount, contents: string[], cwComment = ""): Promise<bigint[]> {
    const ids = contents.map(() => server.services.ids.next());
    await db().note.createMany({
      data: contents.map((content, i) => ({ id: ids[i], authorId: BigInt(who.id), content, cwComment })),
    });
    await db().searchOutbox.createMany({ data: ids.map((targetId) => ({ op: "upsert" as const, targetId })) });
    return ids;
  }

  it.each([
    ["İSTANBUL", "istanbul"],
    ["İSTANBUL", "is"],
    ["istanbul", "İST"],
    ["ΜΑΣΚΑ", "ΜΑΣ"],
    ["ΜΑΣΚΑ", "μασ"],
    ["ΟΔΟΣ", "οσ"],
    ["οδος", "ΟΔΟΣ"],
  ])("a note %j is found by %j, as PostgreSQL's ILIKE finds it", async (content, query) => {
    const note = await post(server, alice, { content: `${content} fold${run}` });
    await drain();
    expect(await postgresOnly(query)).toContain(note.id);
    const candidates = await expectNarrowed(query);
    expect(candidates.map(String)).toContain(note.id);
  });

  it("a note is found the moment its POST returns, before the worker drains it", async () => {
    const note = await post(server, alice, { content: `justposted${run} zebracorn` });
    expect(await db().searchOutbox.count({ where: { targetId: BigInt(note.id) } })).toBe(1);
    expect(await found("zebracorn")).toContain(note.id);
    const viewer = await db().account.findUniqueOrThrow({ where: { id: BigInt(mod.id) } });
    const candidates = await indexCandidates(
      { ...server.services, caller: { account: viewer } },
      parseSearchQuery("zebracorn"),
      undefined,
    );
    expect(candidates?.map(String)).toContain(note.id);
    await drain();
  });

  it("an index that starts empty is left out, then rebuilt by an instance by itself", async () => {
    const kept = await bulk(alice, ["emptystart one", "emptystart two", "other words"]);
    await drain();
    const name = `notes_i15_empty_${run}`;
    created.push(name);
    const fresh = createMeilisearchIndex({ url: MEILI_URL ?? "", key: MEILI_KEY, index: name });
    expect(await searchIndexCompleteness(db(), fresh)).toMatchObject({ complete: false, fix: "rebuild" });
    const ctx: Services & { caller: object } = { ...server.services, search: fresh, caller: {} };
    // No marker: PostgreSQL alone, and right.
    expect(await indexCandidates(ctx, parseSearchQuery("emptystart"), undefined)).toBeUndefined();
    const sync = startSearchSync(db(), fresh, logger);
    try {
      for (let i = 0; i < 600 && !(await searchIndexCompleteness(db(), fresh)).complete; i++)
        await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await sync.stop();
    }
    const candidates = await expectNarrowed("emptystart", fresh);
    for (const id of kept.slice(0, 2)) expect(candidates).toContain(id);
  }, 120_000);

  it("a reindex loses no note written in a transaction held open across its first batch", async () => {
    const id = server.services.ids.next();
    const writer = await holdOpen(db(), async (tx) => {
      await tx.note.create({ data: { id, authorId: BigInt(alice.id), content: `heldopen${run}` } });
      await tx.searchOutbox.create({ data: { op: "upsert", targetId: id } });
    });
    let first = true;
    await rebuildSearchIndex(db(), index(), async () => {
      if (!first) return;
      first = false;
      // Committed after the copy passed, and drained by the worker into the index about to be replaced.
      await writer.commit();
      await drain();
    });
    expect(await db().searchOutbox.count({ where: { targetId: id } })).toBe(0);
    const candidates = await expectNarrowed(`heldopen${run}`);
    expect(candidates).toContain(id);
  }, 120_000);

  it("2,000 notes of 3,000 four-byte characters and a 256-character warning reach the index (split under 100 MB)", async () => {
    const text = (seed: number) =>
      Array.from({ length: 3000 }, (_, i) => String.fromCodePoint(0x20000 + ((seed * 7919 + i * 31) % 40_000))).join(
        "",
      );
    const ids = await bulk(
      alice,
      Array.from({ length: 2000 }, (_, i) => text(i)),
      "⚠".repeat(256),
    );
    await drain();
    expect(await db().searchOutbox.count()).toBe(0);
    const probe = [...text(1234)].slice(100, 103).join("");
    const candidates = await expectNarrowed(probe);
    expect(candidates).toContain(ids[1234]);
    await db().note.deleteMany({ where: { id: { in: ids } } });
  }, 600_000);

  it("freezing an account with many notes sends nothing to the index; searches stay exact", async () => {
    await bulk(
      icy,
      Array.from({ length: 500 }, (_, i) => `icyword number ${i}`),
    );
    await drain();
    await moderate(server, mod, "icy", "freeze");
    expect(await db().searchOutbox.count()).toBe(0);
    expect(await found("icyword")).toEqual([]);
    await expectNarrowed("icyword");
    await moderate(server, mod, "icy", "unfreeze");
    expect(await found("icyword")).toHaveLength(100);
  }, 120_000);

  it("a rare term after ten common grams narrows to its notes (the first ten words alone would overflow)", async () => {
    await bulk(
      alice,
      Array.from({ length: 2100 }, (_, i) => `abcdefghijklm common ${i}`),
    );
    const [rare] = await bulk(alice, ["abcdefghijklm with qz in it"]);
    await drain();
    const candidates = await expectNarrowed("abcdefghijklm qz");
    expect(candidates).toContain(rare);
    expect(candidates.length).toBeLessThan(10);
  }, 300_000);

  it("maxTotalHits lowered behind Murmur's back is seen and applied again; then 1,500 matches all come back", async () => {
    const ids = await bulk(
      alice,
      Array.from({ length: 1500 }, (_, i) => `overflowterm ${i}`),
    );
    await drain();
    await meili()
      .index(index().name)
      .updateSettings({ pagination: { maxTotalHits: 1000 } })
      .waitTask();
    expect(await searchIndexCompleteness(db(), index())).toMatchObject({ complete: false, fix: "settings" });
    await index().prepare();
    expect(await searchIndexCompleteness(db(), index())).toEqual({ complete: true });
    const candidates = await expectNarrowed("overflowterm");
    for (const id of ids) expect(candidates).toContain(id);
  }, 300_000);

  it("before_id pages through the index exactly as PostgreSQL pages (250 matches, three pages)", async () => {
    const ids = await bulk(
      alice,
      Array.from({ length: 250 }, (_, i) => `pagedword${run} ${i}`),
    );
    await drain();
    const pages: string[][] = [];
    let beforeId: string | undefined;
    for (let page = 0; page < 4; page++) {
      const got = await foundThroughIndex(`pagedword${run}`, undefined, beforeId);
      expect(got).toEqual(await postgresOnly(`pagedword${run}`, null, beforeId));
      if (got.length === 0) break;
      pages.push(got);
      beforeId = got[got.length - 1];
    }
    expect(pages.map((p) => p.length)).toEqual([100, 100, 50]);
    expect(pages.flat()).toEqual(ids.map(String).reverse());
  }, 120_000);
});
