// Read replicas (docs/fleet.md#read-replicas) against a real streaming replica that applies each
// transaction DELAY_MS after the primary commits it: a caller's reads of its own writes must
// never show the delay, through REST or GraphQL, on this instance or another; anonymous reads
// come from the replica (and so show it); a replica that stops answering sends its reads to the
// primary, and /readyz says so.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, register } from "./support/fixtures.ts";
import { redisAvailable, startRedis, type TestRedis } from "./support/redis.ts";
import { type ReplicatedDatabase, startReplicatedDatabase } from "./support/replica.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const DELAY_MS = 2000;

let database: ReplicatedDatabase;
let redis: TestRedis | undefined;
let a: TestServer;
let b: TestServer;

async function replicaStatus(server: TestServer): Promise<string> {
  const ready = await server.request("GET", "/readyz");
  return ready.body.checks.replicas[0].status;
}

async function until(condition: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("waited in vain");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  database = await startReplicatedDatabase(DELAY_MS);
  if (redisAvailable) redis = await startRedis();
  else console.warn("redis-server is not installed: read-your-writes across two instances is skipped");
  const env = {
    DATABASE_URL: database.primaryUrl,
    DATABASE_REPLICA_URL: database.replicaUrl,
    TOKEN_SIGNING_KEY: randomBytes(32).toString("base64"),
    ...(redis ? { REDIS_URL: redis.url } : {}),
  };
  a = await startTestServer(env, database.primaryUrl);
  b = await startTestServer({ ...env, WORKER_ID: "2" }, database.primaryUrl);
  // A standby knows its lag once it has applied a transaction: one is written, and waited for.
  await register(a, "first");
  await until(async () => (await replicaStatus(a)) === "up" && (await replicaStatus(b)) === "up", DELAY_MS * 5);
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.stop();
  await database?.stop();
});

describe("a caller reads its own writes; others may read the replica", () => {
  it("register, log in, post and edit, each read at once through REST; anonymous reads lag", async () => {
    const alice = await account(a, "alice");
    const asAlice = { token: alice.token };
    // Registered and verified well within the delay: the replica does not have alice yet.
    expect((await a.request("GET", "/accounts/alice")).body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
    const own = await a.request("GET", "/accounts/alice", asAlice);
    expect(own.status).toBe(200);
    expect(own.body.id).toBe(alice.id);

    const before = { ...a.services.replicas?.counts };
    const posted = await a.request("POST", "/notes", { ...asAlice, body: { content: "replicated hello" } });
    expect(posted.status).toBe(201);
    const id = posted.body.id;
    expect((await a.request("GET", `/notes/${id}`)).body).toEqual({ error: "NOTE_NOT_FOUND" });
    expect((await a.request("GET", `/notes/${id}`, asAlice)).body.id).toBe(id);
    for (const url of [
      "/timeline/accounts/alice",
      "/timeline/global",
      "/timeline/home",
      "/search/notes?query=replicated",
    ]) {
      const read = await a.request("GET", url, asAlice);
      expect(read.status, url).toBe(200);
      expect(
        read.body.map((n: { id: string }) => n.id),
        url,
      ).toContain(id);
    }
    const reacted = await a.request("POST", `/notes/${id}/reaction`, { ...asAlice, body: { emoji: "👍" } });
    expect(reacted.status).toBe(200);
    expect((await a.request("GET", `/notes/${id}`, asAlice)).body.reaction_count).toBe(1);
    const renamed = await a.request("PATCH", "/accounts/alice", { ...asAlice, body: { nickname: "Alice R." } });
    expect(renamed.status).toBe(200);
    expect((await a.request("GET", "/accounts/alice", asAlice)).body.nickname).toBe("Alice R.");

    const after = a.services.replicas?.counts;
    // Alice's seven reads went to the primary, the anonymous one to the replica.
    expect((after?.primary ?? 0) - (before.primary ?? 0)).toBe(7);
    expect((after?.replica ?? 0) - (before.replica ?? 0)).toBe(1);

    // Once the replica has applied them, anonymous readers see the writes, and so does alice there.
    await until(async () => (await a.request("GET", `/notes/${id}`)).status === 200, DELAY_MS * 3);
    await until(async () => {
      const replicaReads = a.services.replicas?.counts.replica ?? 0;
      await a.request("GET", `/notes/${id}`, asAlice);
      return (a.services.replicas?.counts.replica ?? 0) > replicaReads;
    }, DELAY_MS);
    expect((await a.request("GET", "/accounts/alice")).body.nickname).toBe("Alice R.");
  }, 30_000);

  it("through GraphQL: a query after a mutation sees it; an anonymous one reads the replica", async () => {
    const carol = await account(a, "carol");
    const graphql = (query: string, token?: string) =>
      a.request("POST", "/graphql", { body: { query }, ...(token ? { token } : {}) });
    const created = await graphql(
      'mutation { createNote(input: { content: "graphql replicated" }) { ... on MutationCreateNoteSuccess { data { id } } } }',
      carol.token,
    );
    const id = created.body.data.createNote.data.id;
    const read = `{ note(id: "${id}") { __typename ... on QueryNoteSuccess { data { content } } ... on DomainError { code } } }`;
    expect((await graphql(read, carol.token)).body.data.note).toEqual({
      __typename: "QueryNoteSuccess",
      data: { content: "graphql replicated" },
    });
    expect((await graphql(read)).body.data.note).toEqual({ __typename: "DomainError", code: "NOTE_NOT_FOUND" });
  }, 30_000);

  it.skipIf(!redisAvailable)(
    "writes through one instance are read at once through another",
    async () => {
      const dave = await account(a, "dave");
      // Logged in on A; B has never seen dave, and learns where his writes are from Redis.
      expect((await b.request("GET", "/accounts/dave", { token: dave.token })).status).toBe(200);
      const posted = await a.request("POST", "/notes", { token: dave.token, body: { content: "from A to B" } });
      expect((await b.request("GET", `/notes/${posted.body.id}`, { token: dave.token })).status).toBe(200);
      const timeline = await b.request("GET", "/timeline/accounts/dave", { token: dave.token });
      expect(timeline.body.map((n: { id: string }) => n.id)).toContain(posted.body.id);
      expect((await b.request("GET", `/notes/${posted.body.id}`)).body).toEqual({ error: "NOTE_NOT_FOUND" });
      const ready = await b.request("GET", "/readyz");
      expect(ready.body.checks.redis).toBe("up");
    },
    30_000,
  );

  it("a replica that stops answering leaves its reads to the primary, and /readyz says so", async () => {
    await database.stopReplica();
    await until(async () => (await replicaStatus(a)) === "down", 5_000);
    const ready = await a.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks.replicas).toEqual([{ status: "down", lag_seconds: null }]);
    const erin = await register(a, "erin");
    expect((await a.request("GET", `/accounts/${erin.name}`)).status).toBe(200);
  }, 30_000);
});
