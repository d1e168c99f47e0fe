// What search keeps of Meilisearch in PostgreSQL (docs/search.md#backends), against the real
// PostgreSQL and a real Meilisearch client meeting an outage (nothing listens on port 9): the
// outbox joined to the index's hits, the completeness marker that keeps an index out of searches
// until a rebuild completed, the rebuild's lease, and the notes a rebuild sends again for
// transactions open when its copy began. (The same with a real Meilisearch:
// test/search-sync.test.ts.)
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { indexCandidates, indexState, PENDING_MAX } from "../src/domain/search/candidates.ts";
import { FOLDING_VERSION } from "../src/domain/search/fold.ts";
import { parseSearchQuery } from "../src/domain/search/query.ts";
import { createLogger } from "../src/log.ts";
import {
  notesByBatch,
  RebuildRunning,
  rebuildRunning,
  rebuildSearchIndex,
  resendFrom,
  storedMarker,
} from "../src/search/rebuild.ts";
import { SearchWorker } from "../src/search/worker.ts";
import { post } from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { holdOpen } from "./support/held-transaction.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const INDEX = "notes_state_test";

describe("the search index's state in PostgreSQL (Meilisearch down)", () => {
  let server: TestServer;
  let alice: TestAccount;
  const db = () => server.services.db;
  const search = () => server.services.search!;

  beforeAll(async () => {
    server = await startTestServer({ MEILI_URL: "http://127.0.0.1:9", MEILI_INDEX: INDEX });
    alice = await account(server, "alice");
  });
  afterAll(() => server.close());
  beforeEach(async () => {
    await db().searchOutbox.deleteMany();
    await db().searchIndexState.deleteMany();
  });

  const setMarker = (generation: string, folding = FOLDING_VERSION) =>
    db().searchIndexState.create({ data: { indexName: INDEX, generation, folding } });
  const ctx = () => ({ ...server.services, caller: {} });

  it("reads the marker and every note waiting to be indexed in one statement", async () => {
    const a = await post(server, alice, { content: "waiting one" });
    const b = await post(server, alice, { content: "waiting two" });
    await db().searchOutbox.create({ data: { op: "remove", targetId: 1n } });
    expect(await indexState(db(), INDEX)).toEqual({ marker: undefined, pending: [BigInt(a.id), BigInt(b.id)] });

    await setMarker("gen-1");
    expect((await indexState(db(), INDEX)).marker).toEqual({ generation: "gen-1", folding: FOLDING_VERSION });
    // Another index's marker, or one folded otherwise, is not this one's.
    expect((await indexState(db(), "other")).marker).toBeUndefined();
    await db().searchIndexState.update({ where: { indexName: INDEX }, data: { folding: FOLDING_VERSION + 1 } });
    expect((await indexState(db(), INDEX)).marker).toBeUndefined();
  });

  it("a backlog over PENDING_MAX is not joined", async () => {
    await db().searchOutbox.createMany({
      data: Array.from({ length: PENDING_MAX + 1 }, (_, i) => ({ op: "upsert" as const, targetId: BigInt(i + 1) })),
    });
    expect((await indexState(db(), INDEX)).pending).toBeUndefined();
  });

  it("searches ask Meilisearch only with a marker and a backlog small enough to join", async () => {
    const tree = parseSearchQuery("waiting");
    // No marker yet (never rebuilt, a new MEILI_INDEX, a lost volume): PostgreSQL alone, Meilisearch never asked.
    await expect(indexCandidates(ctx(), tree, undefined)).resolves.toBeUndefined();
    await setMarker("gen-1");
    // With a marker, the (down) Meilisearch is asked.
    await expect(indexCandidates(ctx(), tree, undefined)).rejects.toThrow();
    // Unless the backlog is too large to join, or the query has nothing to narrow by.
    await expect(indexCandidates(ctx(), parseSearchQuery("a OR b"), undefined)).resolves.toBeUndefined();
    await db().searchOutbox.createMany({
      data: Array.from({ length: PENDING_MAX + 1 }, (_, i) => ({ op: "upsert" as const, targetId: BigInt(i + 1) })),
    });
    await expect(indexCandidates(ctx(), tree, undefined)).resolves.toBeUndefined();
  });

  it("sends again the notes of a transaction open when the copy began, which the copy cannot see", async () => {
    const id = server.services.ids.next();
    const writer = await holdOpen(db(), (tx) =>
      tx.note.create({ data: { id, authorId: BigInt(alice.id), content: "held open across the copy" } }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The moment the old rebuild took as its start, and the one it takes now.
    const [{ now: started }] = await db().$queryRaw<{ now: Date }[]>`SELECT now()`;
    const from = await resendFrom(db());
    // The copy's first batch: the note is not committed, so not in it.
    const copied = (await notesByBatch(db()).next()).value ?? [];
    expect(copied.map((n: { id: bigint }) => n.id)).not.toContain(id);
    await writer.commit();

    const note = await db().note.findUniqueOrThrow({ where: { id } });
    // created_at is the transaction's start: before the rebuild started, so a catch-up of notes
    // created since `started` misses it...
    expect(note.createdAt.getTime()).toBeLessThan(started.getTime());
    // ...while the window from the oldest open transaction takes it.
    expect(from.getTime()).toBeLessThanOrEqual(note.createdAt.getTime());
    const resent = [];
    for await (const batch of notesByBatch(db(), { createdAt: { gte: from } })) resent.push(...batch.map((n) => n.id));
    expect(resent).toContain(id);
  });

  it("a failed rebuild keeps every outbox row, writes no marker and lets go of its lease", async () => {
    const a = await post(server, alice, { content: "kept through a failed rebuild" });
    await db().searchOutbox.create({ data: { op: "remove", targetId: 7n, createdAt: new Date(0) } });
    const before = await db().searchOutbox.findMany({ orderBy: { id: "asc" } });
    await expect(rebuildSearchIndex(db(), search())).rejects.toThrow();
    expect(await db().searchOutbox.findMany({ orderBy: { id: "asc" } })).toEqual(before);
    expect(before.map((r) => r.targetId)).toContain(BigInt(a.id));
    expect(await storedMarker(db(), INDEX)).toBeUndefined();
    expect(await rebuildRunning(db(), INDEX)).toBe(false);
  });

  it("one rebuild at a time across the fleet: a live lease refuses, a lapsed one is taken", async () => {
    const lease = (until: Date) =>
      db().searchIndexState.upsert({
        where: { indexName: INDEX },
        create: { indexName: INDEX, rebuildOwner: "other:1", rebuildUntil: until },
        update: { rebuildOwner: "other:1", rebuildUntil: until },
      });
    await lease(new Date(Date.now() + 60_000));
    expect(await rebuildRunning(db(), INDEX)).toBe(true);
    await expect(rebuildSearchIndex(db(), search())).rejects.toBeInstanceOf(RebuildRunning);

    // The other process died: its lease lapsed; this one takes it (and fails on the down Meilisearch).
    await lease(new Date(Date.now() - 1000));
    const failure = await rebuildSearchIndex(db(), search()).catch((err) => err);
    expect(failure).not.toBeInstanceOf(RebuildRunning);
    expect(await rebuildRunning(db(), INDEX)).toBe(false);
  });

  it("drops 'account' rows of older versions without asking Meilisearch: a note's index entry never depends on its author", async () => {
    await db().searchOutbox.create({ data: { op: "account", targetId: BigInt(alice.id) } });
    const worker = new SearchWorker(db(), search(), createLogger("silent"));
    await expect(worker.drainOnce()).resolves.toBe(1);
    expect(await db().searchOutbox.count()).toBe(0);
  });

  it("/readyz is 200 while Meilisearch does not answer (searches go to PostgreSQL), with checks.search down", async () => {
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks.search).toBe("down");
    expect(ready.body.search.index).toBe("incomplete");
  });
});
