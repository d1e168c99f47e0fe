// Search's faults (docs/faults.md#search), the write side, on the real PostgreSQL with an HTTP
// server answering as Meilisearch 1.18 does (test/support/meili-http.ts: it keeps documents as sent
// and fails as Meilisearch fails, and never searches): outages set nothing aside (1), deleted notes
// stay deleted with several workers (3) and across a rebuild (4), a rebuild that stops after its
// swap is repaired and one that lost its lease stops (5), a restored index or database is found
// stale (6), every write is recorded while an index exists, MEILI_URL or not (8), and the outbox's
// costs (10).
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { seed } from "../src/cli/seed.ts";
import { Prisma } from "../src/db/client.ts";
import { createLogger } from "../src/log.ts";
import { RebuildLeaseLost, rebuildSearchIndex, searchIndexCompleteness, storedMarker } from "../src/search/rebuild.ts";
import { claimSql, MAX_REFUSALS, SearchWorker } from "../src/search/worker.ts";
import { post } from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { account, PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import { ERRORS, type MeiliError, type MeiliServer, type Request, startMeiliServer } from "./support/meili-http.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const INDEX = "notes_i28";
const isDocuments = (r: Request) => r.path.startsWith(`/indexes/${INDEX}/documents`) && r.method !== "GET";

describe("the search outbox against Meilisearch's failures", () => {
  let meili: MeiliServer;
  let server: TestServer;
  let alice: TestAccount;
  const lines: { level: number; msg?: string }[] = [];
  const log = createLogger(
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        for (const text of chunk.toString().split("\n")) if (text) lines.push(JSON.parse(text));
        done();
      },
    }),
  );
  const db = () => server.services.db;
  const search = () => server.services.search!;
  const worker = () => new SearchWorker(db(), search(), log, server.services.metrics);
  const due = () => db().searchOutbox.updateMany({ data: { nextAttemptAt: new Date(Date.now() - 1000) } });
  const outageCount = async () => {
    const text = await server.services.metrics.registry.getSingleMetricAsString(
      "murmur_search_index_update_failures_total",
    );
    return Number(/ (\d+)$/m.exec(text)?.[1] ?? 0);
  };
  async function drainAll(w = worker()) {
    for (let round = 0; round < 100 && (await w.drainOnce()) > 0; round++);
  }

  beforeAll(async () => {
    meili = await startMeiliServer();
    server = await startTestServer({ MEILI_URL: meili.url, MEILI_INDEX: INDEX });
    alice = await account(server, "alice");
  });
  afterAll(async () => {
    await server.close();
    await meili.close();
  });
  beforeEach(async () => {
    meili.fail = () => undefined;
    meili.before = () => {};
    await db().searchOutbox.deleteMany();
    await db().searchIndexState.deleteMany();
    await db().searchRebuildRemove.deleteMany();
    meili.indexes.clear();
  });

  /** A complete index, as an instance's first rebuild leaves it. */
  async function built() {
    await search().prepare();
    await rebuildSearchIndex(db(), search());
    expect(await searchIndexCompleteness(db(), search())).toEqual({ complete: true });
  }

  describe("1: an outage is retried whole, never split, never set aside", () => {
    const outages: [string, (r: Request) => { now: MeiliError } | { task: MeiliError } | undefined][] = [
      ["a rotated key (403 invalid_api_key)", () => ({ now: ERRORS.invalidApiKey })],
      ["a key removed (401 missing_authorization_header)", () => ({ now: ERRORS.missingAuthorizationHeader })],
      ["500 internal", () => ({ now: ERRORS.internal })],
      [
        "a full disk (a task failing no_space_left_on_device)",
        (r) => (isDocuments(r) ? { task: ERRORS.noSpace } : undefined),
      ],
      ["database_size_limit_reached (a task)", (r) => (isDocuments(r) ? { task: ERRORS.databaseSize } : undefined)],
      ["io_error (a task)", (r) => (isDocuments(r) ? { task: ERRORS.ioError } : undefined)],
      ["a full disk refusing the request (422)", () => ({ now: ERRORS.noSpace })],
    ];

    it.each(outages)(
      "%s: one request a drain, every row kept and retried, nothing set aside, counted, said once",
      async (_, fail) => {
        const notes = [];
        for (let i = 0; i < 4; i++) notes.push(await post(server, alice, { content: `outage note ${i}` }));
        meili.fail = fail;
        const before = await outageCount();
        const said = lines.length;
        // Each round's drain is the one its due() starts: rows due from their writing would be
        // drained once more as the worker starts, and a round could count that drain's request too.
        await db().searchOutbox.updateMany({ data: { nextAttemptAt: new Date(Date.now() + 3_600_000) } });
        const w = worker();
        w.start(5);
        try {
          for (let round = 1; round <= MAX_REFUSALS + 2; round++) {
            const sent = meili.requests.length;
            await due();
            for (let wait = 0; wait < 2000; wait++) {
              const rows = await db().searchOutbox.findMany();
              if (rows.every((r) => r.attempts >= round)) break;
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
            expect((await db().searchOutbox.findMany()).map((r) => r.attempts)).toEqual([round, round, round, round]);
            // Not bisected: one request for the whole batch.
            expect(meili.requests.slice(sent).filter(isDocuments)).toHaveLength(1);
          }
        } finally {
          await w.stop();
        }
        const rows = await db().searchOutbox.findMany();
        expect(rows).toHaveLength(4);
        for (const row of rows) {
          expect(row.refusals).toBe(0);
          expect(row.nextAttemptAt.getTime()).toBeLessThan(Date.now() + 301_000);
        }
        expect(await outageCount()).toBe(before + MAX_REFUSALS + 2);
        // Said once, not a line a batch or a row.
        const outageLines = lines.slice(said).filter((l) => l.msg?.includes("not updated"));
        expect(outageLines).toHaveLength(1);
        expect(lines.slice(said).filter((l) => l.msg?.includes("set aside"))).toEqual([]);

        // It ends: every note reaches the index, no rebuild needed.
        meili.fail = () => undefined;
        await due();
        await drainAll();
        expect(await db().searchOutbox.count()).toBe(0);
        expect(meili.ids(INDEX)).toEqual(expect.arrayContaining(notes.map((n) => n.id)));
      },
    );

    it("a refusal of one document is found by halving, and only that row is counted and in the end set aside", async () => {
      const good = await post(server, alice, { content: "a good note" });
      const bad = await post(server, alice, { content: "a note Meilisearch refuses" });
      const other = await post(server, alice, { content: "another good note" });
      meili.fail = (r) =>
        isDocuments(r) && Array.isArray(r.body) && r.body.some((d: { id?: string }) => d.id === bad.id)
          ? { task: ERRORS.invalidDocumentId }
          : undefined;
      await drainAll();
      expect(meili.ids(INDEX)).toEqual(expect.arrayContaining([good.id, other.id]));
      let [row] = await db().searchOutbox.findMany();
      expect(row).toMatchObject({ targetId: BigInt(bad.id), refusals: 1 });
      for (let i = 1; i < MAX_REFUSALS; i++) {
        await due();
        await worker().drainOnce();
      }
      [row] = await db().searchOutbox.findMany();
      expect(row.refusals).toBe(MAX_REFUSALS);
      const [{ aside }] = await db().$queryRaw<{ aside: boolean }[]>`
        SELECT next_attempt_at = 'infinity' AS aside FROM search_outbox WHERE id = ${row.id}`;
      expect(aside).toBe(true);
    });

    it("while a row is set aside, the index is not said complete", async () => {
      await built();
      const bad = await post(server, alice, { content: "set aside" });
      await db().$executeRaw`
        UPDATE search_outbox SET next_attempt_at = 'infinity', refusals = ${MAX_REFUSALS} WHERE target_id = ${BigInt(bad.id)}`;
      expect(await searchIndexCompleteness(db(), search())).toMatchObject({
        complete: false,
        fix: "operator",
        narrows: true,
      });
    });
  });

  it("3: a note deleted while a worker's upsert is under way, its remove drained by another worker first, stays deleted", async () => {
    await search().prepare();
    const note = await post(server, alice, { content: "raced" });
    const a = worker();
    const b = worker();
    let raced = false;
    meili.before = async (r) => {
      // Worker A read the note and is sending it: meanwhile it is deleted and B drains the remove.
      if (!raced && r.method === "POST" && r.path === `/indexes/${INDEX}/documents`) {
        raced = true;
        const deleted = await server.request("DELETE", `/notes/${note.id}`, { token: alice.token });
        expect(deleted.status).toBe(204);
        await expect(b.drainOnce()).resolves.toBe(1);
      }
    };
    await expect(a.drainOnce()).resolves.toBe(1);
    expect(raced).toBe(true);
    expect(meili.ids(INDEX)).not.toContain(note.id);
    expect(await db().searchOutbox.count()).toBe(0);
  });

  it("4: a note deleted during a rebuild's copy, its remove drained into the old index, is not in the new one", async () => {
    await search().prepare();
    const kept = await post(server, alice, { content: "kept through the rebuild" });
    const gone = await post(server, alice, { content: "deleted during the rebuild" });
    await db().searchOutbox.deleteMany();
    let deleted = false;
    await rebuildSearchIndex(db(), search(), async () => {
      if (deleted) return;
      deleted = true;
      expect((await server.request("DELETE", `/notes/${gone.id}`, { token: alice.token })).status).toBe(204);
      await drainAll();
    });
    expect(deleted).toBe(true);
    // The remove reached the old index, then the swap brought in the copy, which had read it.
    expect(meili.ops.some((op) => op.kind === "delete" && op.ids.includes(gone.id))).toBe(true);
    expect(meili.ids(INDEX)).toContain(kept.id);
    expect(meili.ids(INDEX)).not.toContain(gone.id);
  });

  describe("5: a rebuild's generation and lease", () => {
    it("a rebuild that stops after its swap, before PostgreSQL learns the generation, is repaired by the next check", async () => {
      await built();
      await post(server, alice, { content: "resent after the swap" });
      let swapped = false;
      meili.fail = (r) => {
        if (r.path === "/swap-indexes") swapped = true;
        else if (swapped && r.method !== "GET") return { now: ERRORS.internal };
        return undefined;
      };
      await expect(rebuildSearchIndex(db(), search())).rejects.toThrow();
      expect(swapped).toBe(true);
      meili.fail = () => undefined;
      // The index carries the rebuild's generation, PostgreSQL the one before: repaired by a rebuild.
      expect(await searchIndexCompleteness(db(), search())).toMatchObject({ complete: false, fix: "rebuild" });
      await rebuildSearchIndex(db(), search());
      expect(await searchIndexCompleteness(db(), search())).toEqual({ complete: true });
    });

    it("a rebuild whose lease was taken over stops before its swap and writes no generation", async () => {
      await built();
      const before = await storedMarker(db(), INDEX);
      await post(server, alice, { content: "copied" });
      const sent = meili.requests.length;
      const failure = await rebuildSearchIndex(db(), search(), async () => {
        // Stalled past its lease: another instance took it.
        await db().searchIndexState.update({
          where: { indexName: INDEX },
          data: { rebuildOwner: "other:1", rebuildUntil: new Date(Date.now() + 60_000) },
        });
      }).catch((err) => err);
      expect(failure).toBeInstanceOf(RebuildLeaseLost);
      expect(meili.requests.slice(sent).filter((r) => r.path === "/swap-indexes")).toEqual([]);
      expect(await storedMarker(db(), INDEX)).toEqual(before);
    });
  });

  describe("6: a restored index or database is found stale", () => {
    it("a Meilisearch restored from a snapshot (same generation, notes missing) is left out and rebuilt", async () => {
      await built();
      await post(server, alice, { content: "before the snapshot" });
      await drainAll();
      const snapshot = new Map(meili.indexes.get(INDEX));
      const lost = await post(server, alice, { content: "after the snapshot" });
      await drainAll();
      expect(await searchIndexCompleteness(db(), search())).toEqual({ complete: true });
      meili.indexes.set(INDEX, snapshot);
      expect(meili.ids(INDEX)).not.toContain(lost.id);

      expect(await searchIndexCompleteness(db(), search())).toMatchObject({ complete: false, fix: "rebuild" });
      // Searches leave it out at once.
      expect(await storedMarker(db(), INDEX)).toBeUndefined();
      await rebuildSearchIndex(db(), search());
      expect(meili.ids(INDEX)).toContain(lost.id);
      expect(await searchIndexCompleteness(db(), search())).toEqual({ complete: true });
    });

    it("a PostgreSQL restored to an earlier point (same generation, positions behind the index's) is left out", async () => {
      await built();
      await post(server, alice, { content: "drained" });
      await drainAll();
      const earlier = await db().searchIndexState.findUniqueOrThrow({ where: { indexName: INDEX } });
      const deleted = await post(server, alice, { content: "deleted after the restore point" });
      await drainAll();
      expect((await server.request("DELETE", `/notes/${deleted.id}`, { token: alice.token })).status).toBe(204);
      await drainAll();
      expect(await searchIndexCompleteness(db(), search())).toEqual({ complete: true });
      // The database as it was at the restore point.
      await db().searchIndexState.update({
        where: { indexName: INDEX },
        data: { position: earlier.position, confirmed: earlier.confirmed },
      });
      expect(await searchIndexCompleteness(db(), search())).toMatchObject({ complete: false, fix: "rebuild" });
      expect(await storedMarker(db(), INDEX)).toBeUndefined();
    });

    it("workers draining side by side never make the index look stale", async () => {
      await built();
      for (let i = 0; i < 30; i++) await post(server, alice, { content: `side by side ${i}` });
      // Batches of one row: many positions, handed out and confirmed in every order.
      const workers = [1, 2, 3].map(() => new SearchWorker(db(), search(), log, undefined, 1));
      const checks: unknown[] = [];
      let draining = true;
      const checking = (async () => {
        while (draining) checks.push(await searchIndexCompleteness(db(), search()));
      })();
      await Promise.all(workers.map((w) => drainAll(w)));
      draining = false;
      await checking;
      expect(await db().searchOutbox.count()).toBe(0);
      expect(checks.length).toBeGreaterThan(0);
      for (const check of [...checks, await searchIndexCompleteness(db(), search())])
        expect(check).toEqual({ complete: true });
    });
  });

  describe("10: the outbox's costs", () => {
    it("the waiting notes are read through an index, not a scan of a backlog of removes", async () => {
      await db().$executeRaw`
        INSERT INTO search_outbox (op, target_id) SELECT 'remove', g FROM generate_series(1, 50000) g`;
      await db().$executeRaw`INSERT INTO search_outbox (op, target_id) VALUES ('upsert', 1), ('upsert', 2)`;
      await db().$executeRaw`ANALYZE search_outbox`;
      const plan = await db().$queryRaw<{ "QUERY PLAN": string }[]>`
        EXPLAIN SELECT target_id FROM search_outbox WHERE op = 'upsert' LIMIT 1001`;
      expect(plan.map((l) => l["QUERY PLAN"]).join("\n")).not.toMatch(/Seq Scan/);
    });

    it("a claim reads one batch of rows, however large the backlog (no sort of every due row)", async () => {
      // An outage's rows backed off (lower ids) and a backlog due since.
      await db().$executeRaw`
        INSERT INTO search_outbox (op, target_id, next_attempt_at)
        SELECT 'upsert', g, now() + interval '5 minutes' FROM generate_series(1, 20000) g`;
      await db().$executeRaw`
        INSERT INTO search_outbox (op, target_id, next_attempt_at)
        SELECT 'upsert', g, now() - interval '1 minute' - g * interval '1 ms' FROM generate_series(1, 20000) g`;
      await db().$executeRaw`ANALYZE search_outbox`;
      let plan: unknown;
      await db()
        .$transaction(async (tx) => {
          [plan] = await tx.$queryRaw<unknown[]>(Prisma.sql`EXPLAIN (ANALYZE, FORMAT JSON) ${claimSql()}`);
          throw new Error("rolled back");
        })
        .catch(() => {});
      const nodes: Record<string, unknown>[] = [];
      const walk = (node: Record<string, unknown>) => {
        nodes.push(node);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk((plan as { "QUERY PLAN": { Plan: Record<string, unknown> }[] })["QUERY PLAN"][0].Plan);
      for (const node of nodes) {
        expect(node["Node Type"]).not.toBe("Sort");
        expect(Number(node["Actual Rows"] ?? 0) + Number(node["Rows Removed by Filter"] ?? 0)).toBeLessThanOrEqual(
          1000,
        );
      }
    });

    it("a killed rebuild's fresh index is deleted by the next rebuild", async () => {
      await built();
      // What a rebuild killed during its copy leaves: its fresh index, named in PostgreSQL.
      const leftover = `${INDEX}_1700000000000`;
      meili.indexes.set(leftover, new Map([["1", { id: "1" }]]));
      await db().searchIndexState.update({ where: { indexName: INDEX }, data: { rebuildIndex: leftover } });
      await rebuildSearchIndex(db(), search());
      expect(meili.indexes.has(leftover)).toBe(false);
      expect([...meili.indexes.keys()]).toEqual([INDEX]);
      expect((await db().searchIndexState.findUniqueOrThrow({ where: { indexName: INDEX } })).rebuildIndex).toBeNull();
    });
  });
});

describe("8: writes are recorded whenever an index exists, MEILI_URL or not", () => {
  let server: TestServer;
  let alice: TestAccount;
  let mod: TestAccount;
  const db = () => server.services.db;

  beforeAll(async () => {
    server = await startTestServer();
    ({ alice, moderator: mod } = await cast(server, { alice: "alice", moderator: "mod" }));
  });
  afterAll(() => server.close());

  it("an instance without MEILI_URL records notes created and deleted, and an account's deletion, once an index exists", async () => {
    expect(server.services.search).toBeUndefined();
    await post(server, alice, { content: "before any index" });
    expect(await db().searchOutbox.count()).toBe(0);

    // Another instance, with MEILI_URL, built (or began building) an index.
    await db().searchIndexState.create({ data: { indexName: "notes", generation: "g1", folding: 1 } });
    const created = await post(server, alice, { content: "while an index exists" });
    const renoted = await server.request("POST", `/notes/${created.id}/renote`, { body: {}, token: mod.token });
    expect(renoted.status).toBe(200);
    expect((await server.request("DELETE", `/notes/${created.id}`, { token: alice.token })).status).toBe(204);
    const rows = await db().searchOutbox.findMany({ orderBy: { id: "asc" } });
    expect(rows.map((r) => `${r.op} ${r.targetId}`).sort()).toEqual(
      [`upsert ${created.id}`, `upsert ${renoted.body.id}`, `remove ${created.id}`, `remove ${renoted.body.id}`].sort(),
    );

    await db().searchOutbox.deleteMany();
    const bob = await account(server, "bob");
    const kept = await post(server, bob, { content: "bob's note" });
    const deleting = await server.request("DELETE", "/accounts/bob", {
      body: { passphrase: PASSPHRASE },
      token: bob.token,
    });
    expect(deleting.status, JSON.stringify(deleting.body)).toBe(204);
    expect((await db().searchOutbox.findMany()).map((r) => [r.op, r.targetId.toString()])).toContainEqual([
      "remove",
      kept.id,
    ]);
  });
});

describe("8: `cli seed` records its notes once an index exists", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("writes an upsert row for every seeded note", async () => {
    await server.services.db.searchIndexState.create({ data: { indexName: "notes", generation: "g1", folding: 1 } });
    await seed(server.services, server.databaseUrl, { accounts: 120, notes: 300, passphrase: "seeded-secret" });
    const notes = await server.services.db.note.count();
    expect(notes).toBeGreaterThanOrEqual(300);
    expect(await server.services.db.searchOutbox.count({ where: { op: "upsert" } })).toBe(notes);
  });
});
