// Moderators block, silence or allow a remote server (docs/federation.md#moderation), through REST,
// GraphQL or the CLI, and every instance of a fleet holds the decision at once. Two instances of
// server A share one database (127.0.0.2); B is another Murmur server (127.0.0.4); P is a signing
// peer (127.0.0.5). A block refuses the blocked server's POSTs before their bodies are read, ends
// the follows between its accounts and A's, counters exact, and delivers nothing to it.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizeHost, policyIn } from "../src/domain/instances/policies.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };

let a1: ListeningServer;
let a2: ListeningServer;
let b: ListeningServer;
let peer: SigningPeer;
let failing: SigningPeer;
let alice: TestAccount;
let mod: TestAccount;
let bob: TestAccount;

beforeAll(async () => {
  // A's two instances share one key for tokens and one PUBLIC_URL, as behind a load balancer.
  const env = { FEDERATION_RETRY_MS: "100", TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") };
  [a1, b] = await Promise.all([listening("127.0.0.2", { env }), listening("127.0.0.4", { env })]);
  a2 = await listening("127.0.0.2", { env: { ...env, PUBLIC_URL: a1.url }, databaseUrl: a1.databaseUrl });
  peer = new SigningPeer("127.0.0.5");
  await peer.start();
  peer.serve("p1", "all");
  failing = new SigningPeer("127.0.0.6");
  await failing.start();
  failing.serve("q1", "all");
  ({ alice } = await cast(a1, { alice: "mi_alice" }));
  mod = await account(a1, "mi_mod", "moderator");
  ({ bob } = await cast(b, { bob: "mi_bob" }));
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await failing?.stop();
  for (const server of [a2, a1, b]) {
    await closeFederating(server);
  }
});

async function counts(server: ListeningServer, name: string) {
  const { followed_count, following_count } = (await server.request("GET", `/accounts/${name}`)).body;
  return { followers: followed_count, following: following_count };
}

/** An inbox POST signed (as its header claims) with a key of `host`, and a body that is no JSON at all. */
function claimingToBeFrom(server: ListeningServer, host: string) {
  return server.request("POST", "/inbox", {
    headers: {
      "content-type": "application/activity+json",
      signature: `keyId="http://${host}/users/x#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest",signature="AAAA"`,
    },
    body: "not json {",
  });
}

const INSTANCES = `query ($after: String) {
  instances(after: $after) { ... on QueryInstancesSuccess { data { host policy failures queued } } ... on DomainError { code } } }`;
const SET = `mutation ($host: String!, $policy: InstancePolicyChoice!) {
  setInstancePolicy(host: $host, policy: $policy) {
    ... on MutationSetInstancePolicySuccess { data { host policy } } ... on DomainError { code } } }`;

describe("remote servers' moderation", () => {
  it("is for moderators, on both protocols; a bad host or policy is INVALID_REQUEST", async () => {
    expect((await a1.request("GET", "/admin/instances")).status).toBe(401);
    const refused = await a1.request("GET", "/admin/instances", { token: alice.token });
    expect([refused.status, refused.body]).toEqual([403, { error: "NO_PERMISSION" }]);
    const post = await a1.request("POST", "/admin/instances", {
      token: alice.token,
      body: { host: "example.com", policy: "block" },
    });
    expect([post.status, post.body]).toEqual([403, { error: "NO_PERMISSION" }]);
    expect((await gql(a1, INSTANCES, {}, alice)).instances).toEqual({ code: "NO_PERMISSION" });
    expect((await gql(a1, SET, { host: "example.com", policy: "block" }, alice)).setInstancePolicy).toEqual({
      code: "NO_PERMISSION",
    });
    for (const body of [
      { host: "not a host", policy: "block" },
      { host: "example.com", policy: "banish" },
      { host: new URL(a1.url).host, policy: "block" },
    ]) {
      const answer = await a1.request("POST", "/admin/instances", { token: mod.token, body });
      expect([answer.status, answer.body], JSON.stringify(body)).toEqual([400, { error: "INVALID_REQUEST" }]);
    }
    expect((await gql(a1, SET, { host: "example.com", policy: "banish" }, mod)).setInstancePolicy).toEqual({
      code: "INVALID_REQUEST",
    });
  });

  it("names a server by its host; a name's decision holds for its ports and subdomains", () => {
    expect(normalizeHost("Example.COM")).toBe("example.com");
    expect(normalizeHost("https://example.com/@alice")).toBe("example.com");
    expect(normalizeHost("127.0.0.2:3000")).toBe("127.0.0.2:3000");
    for (const bad of ["", "a b", "x@y.com", "example.com/path"]) expect(normalizeHost(bad)).toBeUndefined();
    const table = new Map([
      ["example.com", "block"],
      ["127.0.0.9", "silence"],
    ] as const);
    expect(policyIn(table, "a.b.example.com:8443")).toBe("block");
    expect(policyIn(table, "notexample.com")).toBeUndefined();
    expect(policyIn(table, "127.0.0.9:80")).toBe("silence");
    expect(policyIn(table, "1.127.0.0.9")).toBeUndefined();
  });

  it("a block set on one instance is held by the other at once: the server's POSTs are refused before their bodies are read, its follows end, counted", async () => {
    const bHost = new URL(b.url).host;
    const aHost = new URL(a1.url).host;
    // Follows both ways, each accepted.
    expect(
      (await a1.request("POST", `/accounts/@mi_bob@${bHost}/follow`, { token: alice.token, body: {} })).status,
    ).toBeLessThan(300);
    expect(
      (await b.request("POST", `/accounts/@mi_alice@${aHost}/follow`, { token: bob.token, body: {} })).status,
    ).toBeLessThan(300);
    await expect.poll(() => counts(a1, "mi_alice"), WAIT).toEqual({ followers: 1, following: 1 });
    // And a follow request of B's account, pending with alice's moderator.
    const bobHere = await a1.services.db.account.findFirstOrThrow({ where: { name: "mi_bob", host: bHost } });
    const modRow = await a1.services.db.account.findFirstOrThrow({ where: { name: "mi_mod" } });
    await a1.services.db.followRequest.create({ data: { requesterId: bobHere.id, targetId: modRow.id } });
    // Unblocked, a POST claiming B's key gets as far as its body (unreadable: 400), or its signature.
    expect((await claimingToBeFrom(a1, bHost)).status).not.toBe(403);

    const set = await a2.request("POST", "/admin/instances", {
      token: mod.token,
      body: { host: `http://${bHost}/`, policy: "block" },
    });
    expect([set.status, set.body]).toEqual([200, { host: bHost, policy: "block" }]);

    // The other instance holds it as soon as PostgreSQL has told it.
    await expect
      .poll(async () => {
        const answer = await claimingToBeFrom(a1, bHost);
        return [answer.status, answer.body];
      }, WAIT)
      .toEqual([403, { error: "NO_PERMISSION" }]);
    expect(await counts(a1, "mi_alice")).toEqual({ followers: 0, following: 0 });
    expect(await a1.services.db.followRequest.count({ where: { requesterId: bobHere.id } })).toBe(0);
    const followers = await a1.request("GET", "/accounts/mi_alice/followers", { token: alice.token });
    expect(followers.body).toEqual([]);
    // B's accounts are no one here while it is blocked.
    const lookup = await a1.request("POST", `/accounts/@mi_bob@${bHost}/follow`, { token: alice.token, body: {} });
    expect([lookup.status, lookup.body]).toEqual([404, { error: "ACCOUNT_NOT_FOUND" }]);

    const listed = (await gql(a1, INSTANCES, {}, mod)).instances.data;
    expect(listed).toContainEqual(expect.objectContaining({ host: bHost, policy: "block" }));
    // What was queued for B before the block (an answer to its Follow, say) is dropped at its turn.
    await expect
      .poll(async () => {
        const rest = await a1.request("GET", "/admin/instances", { token: mod.token });
        expect(rest.status).toBe(200);
        return rest.body;
      }, WAIT)
      .toContainEqual(expect.objectContaining({ host: bHost, policy: "block", queued: 0 }));

    // Allowed again, a POST claiming its key is read as before; the follows stay ended.
    expect((await gql(a1, SET, { host: bHost, policy: "allow" }, mod)).setInstancePolicy).toEqual({
      data: { host: bHost, policy: "allow" },
    });
    await expect.poll(async () => (await claimingToBeFrom(a2, bHost)).status, WAIT).not.toBe(403);
    expect(await counts(a1, "mi_alice")).toEqual({ followers: 0, following: 0 });
  });

  it("delivers nothing to a blocked server, whatever was addressed to it", async () => {
    const pHost = peer.host;
    expect(
      (await a1.request("POST", `/accounts/@p1@${pHost}/follow`, { token: alice.token, body: {} })).status,
    ).toBeLessThan(300);
    await expect.poll(() => counts(a1, "mi_alice"), WAIT).toEqual({ followers: 0, following: 1 });
    expect((await gql(a2, SET, { host: pHost, policy: "block" }, mod)).setInstancePolicy).toEqual({
      data: { host: pHost, policy: "block" },
    });
    await expect.poll(async () => (await claimingToBeFrom(a1, pHost)).status, WAIT).toBe(403);
    // As if P's account had followed alice before the block: her note is addressed to P's inbox.
    const p1 = await a1.services.db.account.findFirstOrThrow({ where: { host: pHost } });
    const aliceRow = await a1.services.db.account.findFirstOrThrow({ where: { name: "mi_alice" } });
    await a1.services.db.follow.create({ data: { followerId: p1.id, followeeId: aliceRow.id } });
    const posted = await a1.request("POST", "/notes", { token: alice.token, body: { content: "not for P" } });
    expect(posted.status).toBeLessThan(300);
    await expect
      .poll(async () => {
        const [row] = await a1.services.db.$queryRaw<{ n: number }[]>`
          SELECT ((SELECT count(*) FROM federation_messages) + (SELECT count(*) FROM federation_outbox))::int AS n`;
        return row.n;
      }, WAIT)
      .toBe(0);
    expect(peer.posts.filter((post) => post.activity?.type === "Create")).toEqual([]);
  });

  it("drops a delivery queued for a server before its block: no request reaches it after", async () => {
    const carol = await account(a1, "mi_carol");
    const qHost = failing.host;
    expect(
      (await a1.request("POST", `/accounts/@q1@${qHost}/follow`, { token: carol.token, body: {} })).status,
    ).toBeLessThan(300);
    const q1 = await a1.services.db.account.findFirstOrThrow({ where: { host: qHost } });
    const carolRow = await a1.services.db.account.findFirstOrThrow({ where: { name: "mi_carol" } });
    await a1.services.db.follow.create({ data: { followerId: q1.id, followeeId: carolRow.id } });
    // Q fails for now: carol's note waits in the queue, tried again and again.
    failing.failWith = 503;
    const creates = () => failing.posts.filter((post) => post.activity?.type === "Create").length;
    expect((await a1.request("POST", "/notes", { token: carol.token, body: { content: "for Q" } })).status).toBe(201);
    await expect.poll(creates, WAIT).toBeGreaterThan(0);

    const set = await a2.request("POST", "/admin/instances", {
      token: mod.token,
      body: { host: qHost, policy: "block" },
    });
    expect(set.status).toBe(200);
    for (const server of [a1, a2])
      await expect.poll(async () => (await claimingToBeFrom(server, qHost)).status, WAIT).toBe(403);
    const queuedForQ = async (claimed: boolean) => {
      const [row] = await a1.services.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM federation_messages
        WHERE message->>'inbox' LIKE ${`${failing.url}/%`} AND (NOT ${claimed} OR claimed_by IS NOT NULL)`;
      return row.n;
    };
    // An attempt that began before the block was known may still be on its way: it ends first.
    await expect.poll(() => queuedForQ(true), WAIT).toBe(0);
    const tried = creates();
    // Q answers again; what was queued for it goes nowhere.
    failing.failWith = 0;
    await expect.poll(() => queuedForQ(false), WAIT).toBe(0);
    expect(creates()).toBe(tried);
  });
});
