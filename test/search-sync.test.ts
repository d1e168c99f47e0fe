// Keeping Meilisearch in sync (docs/search.md#backends): every note create and delete
// writes a search_outbox row in the transaction of the change (the index holds notes' text
// only: freezing an author or deleting a file changes nothing in it); SearchWorker drains the rows, and a
// Meilisearch outage only delays them (retries with backoff) while search goes on, served by
// PostgreSQL alone. Without MEILI_URL nothing is written. With a real Meilisearch (MEILI_URL in
// the environment), both backends answer the same notes for a table of queries.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseSearchQuery, requiredTerms } from "../src/domain/search/query.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { createLogger } from "../src/log.ts";
import { rebuildSearchIndex, storedMarker } from "../src/search/rebuild.ts";
import { SearchWorker } from "../src/search/worker.ts";
import { cast } from "./support/cast.ts";
import { expectError } from "./support/expect.ts";
import { type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

// Nothing listens on port 9: a real Meilisearch client meeting an outage.
const DOWN_MEILI_URL = "http://127.0.0.1:9";
const MEILI_URL = process.env.MEILI_URL;
if (!MEILI_URL) {
  console.log("Meilisearch parity tests SKIPPED: set MEILI_URL (docker compose up meilisearch) to run them");
}

const logger = createLogger("silent");

interface Created {
  id: string;
  content: string;
}

/** Thin REST helpers over one server. */
function client(server: TestServer) {
  const helpers = {
    async note(who: TestAccount, body: Record<string, unknown>): Promise<Created> {
      const answer = await server.request("POST", "/notes", { body, token: who.token });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      return answer.body;
    },
    async renote(who: TestAccount, id: string, body: Record<string, unknown> = {}): Promise<Created> {
      const answer = await server.request("POST", `/notes/${id}/renote`, { body, token: who.token });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body;
    },
    async reply(who: TestAccount, id: string, body: Record<string, unknown>): Promise<Created> {
      const answer = await server.request("POST", `/notes/${id}/reply`, { body, token: who.token });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body;
    },
    async remove(who: TestAccount, id: string) {
      const answer = await server.request("DELETE", `/notes/${id}`, { token: who.token });
      expect(answer.status, JSON.stringify(answer.body)).toBe(204);
    },
    async moderate(moderator: TestAccount, method: "PUT" | "DELETE", name: string): Promise<Answer> {
      return server.request(method, `/accounts/${name}/freeze`, { body: {}, token: moderator.token });
    },
    async png(who: TestAccount, name: string) {
      return uploadFile(server, who, await image("png", 8, 8), name);
    },
    /** The ids a search answers (200 required), newest first. */
    async found(query: string, who?: TestAccount, beforeId?: string): Promise<string[]> {
      const params = new URLSearchParams({ query });
      if (beforeId !== undefined) params.set("before_id", beforeId);
      const answer = await server.request("GET", `/search/notes?${params}`, { token: who?.token });
      expect(answer.status, `${query}: ${JSON.stringify(answer.body)}`).toBe(200);
      return answer.body.map((n: Created) => n.id);
    },
  };
  return helpers;
}

function newestFirst(...notes: Created[]): string[] {
  return notes.map((n) => n.id).sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : BigInt(b) < BigInt(a) ? -1 : 0));
}

/** The outbox rows as (op, target id), in the order written. */
async function outbox(server: TestServer): Promise<{ op: string; targetId: string }[]> {
  const rows = await server.services.db.searchOutbox.findMany({ orderBy: { id: "asc" } });
  return rows.map((r) => ({ op: r.op, targetId: r.targetId.toString() }));
}

const byTarget = (a: { targetId: string }, b: { targetId: string }) => (a.targetId < b.targetId ? -1 : 1);

describe("the outbox with Meilisearch configured (and down)", () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let alice: TestAccount;
  let bob: TestAccount;
  let mod: TestAccount;
  let frosty: TestAccount;

  beforeAll(async () => {
    server = await startTestServer({ MEILI_URL: DOWN_MEILI_URL });
    api = client(server);
    const names = { alice: "alice", follower: "bob", moderator: "mod", stranger: "frosty" };
    ({ alice, follower: bob, moderator: mod, stranger: frosty } = await cast(server, names));
  });
  afterAll(() => server.close());
  // Each test reads only the rows its own actions wrote.
  beforeEach(async () => {
    await server.services.db.searchOutbox.deleteMany();
  });

  it("has a search index configured", () => {
    expect(server.services.search).toBeDefined();
  });

  it("creating a note writes one 'upsert' row for it, not yet attempted", async () => {
    const created = await api.note(alice, { content: "outbox first" });
    const rows = await server.services.db.searchOutbox.findMany();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ op: "upsert", targetId: BigInt(created.id), attempts: 0 });
    expect(rows[0].nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it("every kind of note writes its 'upsert': followers, direct, with media, plain renote, quote, reply", async () => {
    const file = await api.png(alice, "pic.png");
    const notes = [
      await api.note(alice, { content: "for followers", visibility: "followers" }),
      await api.note(alice, { content: "for bob", visibility: "direct", send_to: bob.id }),
      await api.note(alice, { content: "", attachment_file_ids: [file.id] }),
    ];
    notes.push(await api.renote(bob, notes[2].id));
    notes.push(await api.renote(bob, notes[2].id, { content: "a quote" }));
    notes.push(await api.reply(bob, notes[0].id, { content: "a reply" }));
    expect(await outbox(server)).toEqual(notes.map((n) => ({ op: "upsert", targetId: n.id })));
  });

  it("deleting a note writes 'remove' for it and its plain renotes, not for its quotes or replies", async () => {
    const original = await api.note(alice, { content: "soon gone" });
    const plainBob = await api.renote(bob, original.id);
    const plainMod = await api.renote(mod, original.id);
    await api.renote(bob, original.id, { content: "a quote stays" });
    await api.reply(bob, original.id, { content: "a reply stays" });
    await server.services.db.searchOutbox.deleteMany();

    await api.remove(alice, original.id);
    const rows = await outbox(server);
    expect(rows.sort(byTarget)).toEqual(
      [original, plainBob, plainMod].map((n) => ({ op: "remove", targetId: n.id })).sort(byTarget),
    );
  });

  it("a moderator deleting another account's note writes the same 'remove' rows", async () => {
    const original = await api.note(bob, { content: "moderated away" });
    const plain = await api.renote(alice, original.id);
    await server.services.db.searchOutbox.deleteMany();
    await api.remove(mod, original.id);
    expect((await outbox(server)).sort(byTarget)).toEqual(
      [original, plain].map((n) => ({ op: "remove", targetId: n.id })).sort(byTarget),
    );
  });

  it("freezing, unfreezing or deleting a file writes no row: the index holds notes' text only, PostgreSQL applies the rest", async () => {
    await api.note(frosty, { content: "frosty speaks" });
    const file = await api.png(alice, "a.png");
    await api.note(alice, { content: "one with media", attachment_file_ids: [file.id] });
    await server.services.db.searchOutbox.deleteMany();

    expect((await api.moderate(mod, "PUT", "frosty")).status).toBe(204);
    expectError(await api.moderate(mod, "PUT", "frosty"), 400, "ALREADY_FROZEN");
    expect((await api.moderate(mod, "DELETE", "frosty")).status).toBe(204);
    expect((await server.request("DELETE", `/drive/${file.id}`, { token: alice.token })).status).toBe(204);
    expect(await outbox(server)).toEqual([]);
  });

  it("a note that fails (ATTACHMENT_NOT_FOUND and other errors) leaves no outbox row and no note", async () => {
    const before = await server.services.db.note.count();
    const bobsFile = await api.png(bob, "bobs.png");
    const attempts: [Record<string, unknown>, number, string][] = [
      [{ content: "x", attachment_file_ids: ["999999999999999999"] }, 404, "ATTACHMENT_NOT_FOUND"],
      [{ content: "x", attachment_file_ids: [bobsFile.id] }, 404, "ATTACHMENT_NOT_FOUND"],
      [{ content: "x".repeat(3001) }, 400, "TOO_MANY_CONTENT"],
      [{ content: "x", visibility: "direct" }, 400, "NO_DESTINATION"],
      [{ content: "x", visibility: "direct", send_to: "999999999999999999" }, 404, "ACCOUNT_NOT_FOUND"],
    ];
    for (const [body, status, code] of attempts) {
      expectError(await server.request("POST", "/notes", { body, token: alice.token }), status, code);
    }
    expectError(
      await server.request("POST", "/notes/999999999999999999/renote", { body: {}, token: alice.token }),
      404,
      "NOTE_NOT_FOUND",
    );
    expect(await outbox(server)).toEqual([]);
    expect(await server.services.db.note.count()).toBe(before);
  });

  it("writes the row in the change's own transaction: when the row cannot be written, the change is undone", async () => {
    const kept = await api.note(alice, { content: "must survive" });
    await server.services.db.searchOutbox.deleteMany();
    const before = await server.services.db.note.count();
    const db = server.services.db;
    await db.$executeRawUnsafe("ALTER TABLE search_outbox RENAME TO search_outbox_away");
    try {
      const created = await server.request("POST", "/notes", { body: { content: "never stored" }, token: alice.token });
      expectError(created, 500, "INTERNAL_ERROR");
      const deleted = await server.request("DELETE", `/notes/${kept.id}`, { token: alice.token });
      expectError(deleted, 500, "INTERNAL_ERROR");
    } finally {
      await db.$executeRawUnsafe("ALTER TABLE search_outbox_away RENAME TO search_outbox");
    }
    expect(await db.note.count()).toBe(before);
    expect(await db.note.count({ where: { content: "never stored" } })).toBe(0);
    expect((await server.request("GET", `/notes/${kept.id}`)).status).toBe(200);
    expect(await outbox(server)).toEqual([]);
  });

  it("an outage: drainOnce rejects, every row stays with attempts 1 and a backoff; a second drain right away takes none", async () => {
    const notes = [
      await api.note(alice, { content: "outage one" }),
      await api.note(alice, { content: "outage two" }),
      await api.note(bob, { content: "outage three" }),
    ];
    await api.remove(bob, notes[2].id);
    const worker = new SearchWorker(server.services.db, server.services.search!, logger);

    const started = Date.now();
    await expect(worker.drainOnce()).rejects.toThrow();
    let rows = await server.services.db.searchOutbox.findMany({ orderBy: { id: "asc" } });
    expect(rows.map((r) => ({ op: r.op, targetId: r.targetId.toString() }))).toEqual([
      ...notes.map((n) => ({ op: "upsert", targetId: n.id })),
      { op: "remove", targetId: notes[2].id },
    ]);
    for (const row of rows) {
      expect(row.attempts).toBe(1);
      // Due again after a backoff (2 s), not at once and not after the 60 s lease.
      expect(row.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
      expect(row.nextAttemptAt.getTime()).toBeLessThan(started + 30_000);
    }
    const firstDelay = rows[0].nextAttemptAt.getTime() - started;

    // Not due yet: nothing is taken, nothing changes.
    await expect(worker.drainOnce()).resolves.toBe(0);
    const again = await server.services.db.searchOutbox.findMany({ orderBy: { id: "asc" } });
    expect(again).toEqual(rows);

    // Once due, the rows are retried: a second failure doubles the backoff; still nothing lost.
    await server.services.db.searchOutbox.updateMany({ data: { nextAttemptAt: new Date(Date.now() - 1000) } });
    const retried = Date.now();
    await expect(worker.drainOnce()).rejects.toThrow();
    rows = await server.services.db.searchOutbox.findMany({ orderBy: { id: "asc" } });
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(row.attempts).toBe(2);
      expect(row.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
    }
    expect(rows[0].nextAttemptAt.getTime() - retried).toBeGreaterThan(firstDelay);
    await expect(worker.drainOnce()).resolves.toBe(0);
  });

  it("search still works during the outage: PostgreSQL answers alone, with the right notes", async () => {
    const pub = await api.note(alice, { content: "stormy weather report" });
    const followers = await api.note(alice, { content: "stormy secret", visibility: "followers" });
    const direct = await api.note(alice, { content: "stormy whisper", visibility: "direct", send_to: bob.id });
    await api.note(alice, { content: "calm weather report" });

    expect(await api.found("stormy")).toEqual([pub.id]);
    expect(await api.found("stormy", bob)).toEqual(newestFirst(pub, followers, direct));
    expect(await api.found('"stormy weather"')).toEqual([pub.id]);
    expect(await api.found("stormy OR calm -report", bob)).toEqual(newestFirst(pub, followers, direct));
    expect(await api.found("from:alice stormy -secret", alice)).toEqual(newestFirst(pub, direct));
    expect(await api.found("weather -stormy")).toHaveLength(1);
  });

  it("/readyz stays 200 while Meilisearch is down (searches go to PostgreSQL), and checks.search says down", async () => {
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks.search).toBe("down");
  });
});

describe("the outbox without MEILI_URL", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("has no search index, and creating, renoting, deleting, freezing or dropping a file writes no row", async () => {
    expect(server.services.search).toBeUndefined();
    const api = client(server);
    const { alice, bob, moderator: mod } = await cast(server, { alice: "alice", bob: "bob", moderator: "mod" });
    const file = await api.png(alice, "pic.png");
    const created = await api.note(alice, { content: "plain postgres", attachment_file_ids: [file.id] });
    await api.renote(bob, created.id);
    await api.renote(bob, created.id, { content: "quoted" });
    expect(await server.services.db.searchOutbox.count()).toBe(0);

    expect((await server.request("DELETE", `/drive/${file.id}`, { token: alice.token })).status).toBe(204);
    expect((await api.moderate(mod, "PUT", "bob")).status).toBe(204);
    expect((await api.moderate(mod, "DELETE", "bob")).status).toBe(204);
    await api.remove(alice, created.id);
    expect(await server.services.db.searchOutbox.count()).toBe(0);
    expect((await server.request("GET", "/readyz")).status).toBe(200);
  });
});

describe.skipIf(!MEILI_URL)("Meilisearch parity and drain (MEILI_URL set)", () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let alice: TestAccount;
  let bob: TestAccount;
  let carol: TestAccount;
  let icy: TestAccount;
  let mod: TestAccount;
  let kept: Created[];
  let deleted: Created;
  let frozenNote: Created;

  const marker = async () => (await storedMarker(server.services.db, server.services.search!.name))!;

  /** Drains the outbox into Meilisearch until nothing is left. */
  async function drain() {
    const worker = new SearchWorker(server.services.db, server.services.search!, logger);
    for (let round = 0; round < 100 && (await worker.drainOnce()) > 0; round++);
    expect(await server.services.db.searchOutbox.count()).toBe(0);
  }

  /** The ids the service answers with search disabled: PostgreSQL alone. */
  async function postgresOnly(query: string, who?: TestAccount, beforeId?: string): Promise<string[]> {
    const viewer = who
      ? await server.services.db.account.findUniqueOrThrow({ where: { id: BigInt(who.id) } })
      : undefined;
    const notes = await searchNotes(
      { ...server.services, search: undefined, caller: { account: viewer } },
      query,
      beforeId,
    );
    return notes.map((n) => n.id.toString());
  }

  beforeAll(async () => {
    server = await startTestServer({
      MEILI_URL: MEILI_URL ?? "",
      MEILI_KEY: process.env.MEILI_KEY ?? "",
      // An index of this run alone: earlier runs leave theirs behind in a shared Meilisearch.
      MEILI_INDEX: `notes_test_${Date.now()}`,
    });
    await server.services.search!.prepare();
    // The marker of a complete (empty) index, as an instance writes at start: the index is used.
    await rebuildSearchIndex(server.services.db, server.services.search!);
    api = client(server);
    const names = { alice: "alice", follower: "bob", bob: "carol", stranger: "icy", moderator: "mod" };
    ({ alice, follower: bob, bob: carol, stranger: icy, moderator: mod } = await cast(server, names));
    const [f1, f2] = [await api.png(alice, "p1.png"), await api.png(carol, "p2.png")];
    kept = [];
    const add = async (who: TestAccount, body: Record<string, unknown>) => {
      const created = await api.note(who, body);
      kept.push(created);
      return created;
    };
    const parrot = await add(alice, { content: "Parrot talks: Concatenate CATS" });
    await add(alice, { content: "parrots and pigeons", cw_comment: "birds" });
    await add(bob, { content: "pigeon post https://example.com/pigeon" });
    await add(carol, { content: "a quiet parrot http://example.org" });
    await add(alice, { content: "猫が好き parrot" });
    await add(carol, { content: "犬が好き pigeon" });
    await add(alice, { content: "followers parrot secret", visibility: "followers" });
    await add(alice, { content: "direct parrot whisper", visibility: "direct", send_to: bob.id });
    await add(bob, { content: "home pigeon", visibility: "home" });
    await add(alice, { content: "parrot picture", attachment_file_ids: [f1.id] });
    await add(carol, { content: "", cw_comment: "pigeon photo", attachment_file_ids: [f2.id] });
    await add(carol, { content: "100% parrot_case \\ slash" });
    await add(bob, { content: "the quick brown parrot" });
    kept.push(await api.renote(bob, parrot.id));
    kept.push(await api.renote(carol, parrot.id, { content: "quoting the parrot" }));
    kept.push(await api.reply(carol, parrot.id, { content: "replying to parrot" }));
    deleted = await api.note(carol, { content: "parrot deleted later" });
    frozenNote = await api.note(icy, { content: "frozen parrot" });
    await drain();
    // Changes after a first drain: a delete and a freeze, drained in their turn.
    await api.remove(carol, deleted.id);
    expect((await api.moderate(mod, "PUT", "icy")).status).toBe(204);
    await drain();
  });
  afterAll(() => server?.close());

  it("the drained index holds the notes and not the deleted one", async () => {
    const candidates = await server.services.search!.candidates(parseSearchQuery("parrot"), undefined, await marker());
    expect(candidates).toBeDefined();
    const ids = new Set((candidates ?? []).map(String));
    for (const n of kept.filter((k) => k.content.toLowerCase().includes("parrot")))
      expect(ids.has(n.id), n.content).toBe(true);
    expect(ids.has(deleted.id)).toBe(false);
    expect(ids.has(frozenNote.id)).toBe(true);
  });

  const QUERIES = [
    "parrot",
    "PARROT",
    "pigeon",
    "cat",
    '"quick brown"',
    '"brown parrot"',
    "parrot pigeon",
    "parrot OR pigeon",
    "parrot -pigeon",
    "parrot -(secret OR whisper)",
    'parrot -"the quick"',
    "parrots pigeons",
    "猫",
    "好き",
    "猫が",
    "from:alice",
    "from:carol parrot",
    `from:@bob@murmur.test pigeon`,
    "from:nobody",
    "from:bob is:renote",
    "parrot is:quote",
    "from:carol is:quote",
    "parrot has:link",
    "pigeon has:link",
    "parrot has:media",
    "pigeon has:media",
    "parrot -has:media",
    "%",
    "_case",
    "\\",
    "(parrot OR pigeon) -has:link",
    "deleted",
    "frozen parrot",
    "from:icy",
  ];

  // Parity alone would pass with the index never asked: every query the index can narrow must be
  // narrowed, to a superset of what PostgreSQL finds for a moderator (who sees every note).
  it.each(QUERIES.filter((q) => requiredTerms(parseSearchQuery(q))))(
    "%j: Meilisearch is asked and its candidates hold every match",
    async (query) => {
      const candidates = await server.services.search!.candidates(parseSearchQuery(query), undefined, await marker());
      expect(candidates, "the index did not narrow").toBeDefined();
      const held = new Set(candidates!.map(String));
      for (const id of await postgresOnly(query, mod)) expect(held.has(id), id).toBe(true);
    },
  );

  it.each(QUERIES)("%j: the same notes with and without Meilisearch (anonymous)", async (query) => {
    expect(await api.found(query)).toEqual(await postgresOnly(query));
  });

  it.each(QUERIES)("%j: the same notes with and without Meilisearch (a follower and recipient)", async (query) => {
    expect(await api.found(query, bob)).toEqual(await postgresOnly(query, bob));
  });

  it.each(["parrot", "frozen parrot", "from:icy"])("%j: the same notes for a moderator", async (query) => {
    expect(await api.found(query, mod)).toEqual(await postgresOnly(query, mod));
  });

  it("pages alike with before_id", async () => {
    const all = await postgresOnly("parrot", bob);
    expect(all.length).toBeGreaterThan(3);
    expect(await api.found("parrot", bob, all[2])).toEqual(await postgresOnly("parrot", bob, all[2]));
  });
});
