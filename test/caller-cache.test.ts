// Callers' accounts are cached (src/domain/sessions/caller-cache.ts) and forgotten when
// PostgreSQL announces a change to them, whoever made it; while nobody listens, none is kept.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallerAccount, CallerCache } from "../src/domain/sessions/caller-cache.ts";
import { createLogger } from "../src/log.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let operator: pg.Client;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "cc_alice");
  bob = await account(server, "cc_bob");
  // Changes made beside the server: an operator's SQL, another instance, the CLI.
  operator = new pg.Client({ connectionString: server.databaseUrl });
  await operator.connect();
});
afterAll(async () => {
  await operator.end();
  await server.close();
});

/** Polls `check` until it holds, for at most `ms`; answers whether it did. */
async function eventually(check: () => Promise<boolean>, ms = 3_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

const post = (who: TestAccount) => server.request("POST", "/notes", { token: who.token, body: { content: "cc note" } });

describe("the cached caller", () => {
  it("is frozen, then unfrozen, by a change made outside the server", async () => {
    expect((await post(alice)).status).toBe(201); // alice's account is now cached
    await operator.query("UPDATE accounts SET frozen = true WHERE id = $1", [alice.id]);
    expect(await eventually(async () => (await post(alice)).status === 403)).toBe(true);
    expect((await post(alice)).body).toEqual({ error: "YOU_ARE_FROZEN" });
    await operator.query("UPDATE accounts SET frozen = false WHERE id = $1", [alice.id]);
    expect(await eventually(async () => (await post(alice)).status === 201)).toBe(true);
  });

  it("takes a role given outside the server", async () => {
    const freeze = () => server.request("PUT", "/accounts/cc_bob/freeze", { token: alice.token, body: {} });
    expect((await freeze()).body).toEqual({ error: "NO_PERMISSION" });
    await operator.query("UPDATE accounts SET role = 'moderator' WHERE id = $1", [alice.id]);
    expect(await eventually(async () => (await freeze()).status === 204)).toBe(true);
    const unfrozen = await server.request("DELETE", "/accounts/cc_bob/freeze", { token: alice.token, body: {} });
    expect(unfrozen.status).toBe(204);
    await operator.query("UPDATE accounts SET role = 'normal' WHERE id = $1", [alice.id]);
  });

  it("is changed through this server in time for the very next request, twenty times running", async () => {
    const moderator = await account(server, "cc_mod", "moderator");
    const dave = await account(server, "cc_dave");
    const moderate = (method: string) =>
      server.request(method, "/accounts/cc_dave/freeze", { token: moderator.token, body: {} });
    // The database's announcement comes a moment later; this server forgets its copy at once.
    for (let i = 0; i < 20; i++) {
      expect((await post(dave)).status).toBe(201);
      expect((await moderate("PUT")).status).toBe(204);
      expect((await post(dave)).body).toEqual({ error: "YOU_ARE_FROZEN" });
      expect((await moderate("DELETE")).status).toBe(204);
    }
  });

  it("shows counters as they are: the viewer query, and a new note's author", async () => {
    const carol = await account(server, "cc_carol");
    const followed = await server.request("POST", "/accounts/cc_carol/follow", { token: bob.token, body: {} });
    expect(followed.status, JSON.stringify(followed.body)).toBe(201);
    const graphql = async (query: string) =>
      (await server.request("POST", "/graphql", { token: carol.token, body: { query } })).body.data;
    const viewer = async () =>
      (await graphql("{ viewer { ... on QueryViewerSuccess { data { noteCount followedCount } } } }")).viewer.data;
    expect(await viewer()).toEqual({ noteCount: 0, followedCount: 1 });
    const created = await graphql(
      `mutation { createNote(input: { content: "cc" }) {
        ... on MutationCreateNoteSuccess { data { author { noteCount followedCount } } } } }`,
    );
    expect(created.createNote.data.author).toEqual({ noteCount: 1, followedCount: 1 });
    await post(carol);
    expect(await viewer()).toEqual({ noteCount: 2, followedCount: 1 });
  });
});

describe("CallerCache", () => {
  let reads: bigint[];
  let cache: CallerCache;
  beforeAll(() => {
    reads = [];
    cache = new CallerCache(
      server.databaseUrl,
      async (id) => {
        reads.push(id);
        const { rows } = await operator.query("SELECT id FROM accounts WHERE id = $1", [id]);
        return rows[0] ? ({ id: BigInt(rows[0].id) } as CallerAccount) : null;
      },
      createLogger("silent"),
    );
    cache.listen();
  });
  afterAll(() => cache.close());

  const aliceId = () => BigInt(alice.id);
  const bobId = () => BigInt(bob.id);
  /** Whether a get of `id` was answered without reading the database. */
  const cached = async (id: bigint) => {
    const before = reads.length;
    await cache.get(id);
    return reads.length === before;
  };

  it("keeps accounts once it listens, and forgets one when a change to it is announced", async () => {
    expect(await eventually(() => cached(aliceId()))).toBe(true);
    expect(await eventually(() => cached(bobId()))).toBe(true);
    // Counters that others' actions move are not announced: posting does not empty the cache.
    await operator.query("UPDATE accounts SET notes_count = notes_count + 1, followers_count = 7 WHERE id = $1", [
      alice.id,
    ]);
    // Announcements arrive in commit order: once bob's is heard, alice's would have been.
    await operator.query("UPDATE accounts SET nickname = 'Bob B' WHERE id = $1", [bob.id]);
    expect(await eventually(async () => !(await cached(bobId())))).toBe(true);
    expect(await cached(aliceId())).toBe(true);
    await operator.query("UPDATE accounts SET bio = 'changed' WHERE id = $1", [alice.id]);
    expect(await eventually(async () => !(await cached(aliceId())))).toBe(true);
    expect(await cached(aliceId())).toBe(true);
  });

  it("keeps nothing while its listening connection is gone, and listens again", async () => {
    expect(await eventually(() => cached(aliceId()))).toBe(true);
    const { rowCount } = await operator.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE 'LISTEN murmur_account_changes%' AND pid <> pg_backend_pid()`,
    );
    expect(rowCount).toBeGreaterThan(0);
    expect(await eventually(async () => !(await cached(aliceId())))).toBe(true);
    // Not listening: every get reads.
    expect(await cached(aliceId())).toBe(false);
    expect(await cached(aliceId())).toBe(false);
    // Listening again within a few seconds, it keeps accounts again.
    expect(await eventually(() => cached(aliceId()), 5_000)).toBe(true);
  });
});
