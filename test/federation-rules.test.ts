// Federation's rules end to end (docs/federation.md#built-so-far) that no other file
// proves. Inboxes: a POST signed by another actor's key than its `actor` is refused, a key that
// fails is fetched again once (rotations), an activity received twice is handled once, the body and
// the signature's age are bounded. Remote names in GraphQL's social mutations and follow requests.
// Delivery: a server stopped while a Follow to it is queued gets it once it is back.
//
// Two Murmur servers, A (127.0.0.3) and B (127.0.0.2), and a third, `held`, that works no queue
// (FEDERATION_QUEUE=off), so that what its inbox took stays queued to be counted: a refused POST
// queued nothing, so nothing of it will ever be handled. Remote actors are played by a small HTTP
// server of this file on 127.0.0.1, serving each actor with its current key and taking every POST.
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { signRequest } from "@fedify/fedify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";

const AP = "application/activity+json";
/** Delivery and the handling of what arrives are asynchronous: a bounded wait. */
const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let b: ListeningServer;
let held: TestServer;
let aHost: string;
let bHost: string;
let alice: TestAccount;
let erin: TestAccount;
let carol: TestAccount;
let dave: TestAccount;
let heldAlice: TestAccount;

/** The peer's actors by name, each with its current key pair. */
const peerKeys = new Map<string, CryptoKeyPair>();
/** The paths of the GETs the peer was sent, and the bodies of its POSTs. */
const peerGets: string[] = [];
// biome-ignore lint/suspicious/noExplicitAny: activities are read field by field
const peerPosts: any[] = [];
let peer: http.Server;
let peerUrl: string;

const actorUri = (name: string) => `${peerUrl}/users/${name}`;
const keyId = (name: string) => `${actorUri(name)}#main-key`;

async function answerPeer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const path = new URL(request.url ?? "/", peerUrl).pathname;
  if (request.method === "POST") {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    peerPosts.push(JSON.parse(Buffer.concat(chunks).toString()));
    response.writeHead(202).end();
    return;
  }
  peerGets.push(path);
  const name = /^\/users\/(\w+)$/.exec(path)?.[1];
  const keys = name ? peerKeys.get(name) : undefined;
  if (!name || !keys) {
    response.writeHead(404).end();
    return;
  }
  const pem = KeyObject.from(keys.publicKey).export({ type: "spki", format: "pem" }).toString();
  response.writeHead(200, { "content-type": AP }).end(
    JSON.stringify({
      "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
      id: actorUri(name),
      type: "Person",
      preferredUsername: name,
      inbox: `${actorUri(name)}/inbox`,
      publicKey: { id: keyId(name), owner: actorUri(name), publicKeyPem: pem },
    }),
  );
}

beforeAll(async () => {
  for (const name of ["mallory", "eve", "rita"]) peerKeys.set(name, await rsaKeyPair());
  peer = http.createServer((request, response) => void answerPeer(request, response));
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;

  [a, b, held] = await Promise.all([
    // Retries and pauses short, so that a stopped server is tried again soon after it is back.
    listening("127.0.0.3", { env: { FEDERATION_RETRY_MS: "100", FEDERATION_PAUSE_MS: "500" } }),
    listening("127.0.0.2"),
    startTestServer({ FEDERATION_QUEUE: "off", FEDERATION_ALLOW_PRIVATE: "true" }),
  ]);
  aHost = a.services.config.localHost;
  bHost = b.services.config.localHost;
  [{ alice, bob: erin }, { alice: carol, stranger: dave }, { alice: heldAlice }] = await Promise.all([
    cast(a, { alice: "alice", bob: "erin" }),
    cast(b, { bob: "bob", alice: "carol", stranger: "dave" }),
    cast(held, { alice: "alice" }),
  ]);
  const locked = await b.request("PATCH", "/accounts/dave", { token: dave.token, body: { locked: true } });
  expect(locked.status).toBe(200);
}, 60_000);

async function close(server: TestServer | undefined): Promise<void> {
  await closeFederating(server);
}

afterAll(async () => {
  for (const server of [a, b, held]) await close(server);
  peer?.close();
});

/** A Follow of `object` by the peer's actor `name`, pretty-printed (a body written again would not match its Digest). */
function follow(name: string, id: string, object: string, padding?: string): string {
  return JSON.stringify(
    {
      "@context": "https://www.w3.org/ns/activitystreams",
      id: `${peerUrl}/follows/${id}`,
      type: "Follow",
      actor: actorUri(name),
      object,
      ...(padding && { summary: padding }),
    },
    null,
    2,
  );
}

interface Signing {
  /** Whose key signs: the peer actor's name. */
  signer: string;
  /** The key pair signing, the signer's current one by default. */
  keys?: CryptoKeyPair;
  /** The signature's Date, now by default. */
  date?: Date;
}

/** `body` POSTed to `path` of `server` (whose PUBLIC_URL is `origin`), signed draft-cavage as `signing` says. */
async function post(server: TestServer, origin: string, path: string, body: string, signing?: Signing) {
  const headers: Record<string, string> = { "content-type": AP };
  if (signing) {
    const request = new Request(`${origin}${path}`, {
      method: "POST",
      headers: { ...headers, ...(signing.date && { date: signing.date.toUTCString() }) },
      body,
    });
    const keys = signing.keys ?? (peerKeys.get(signing.signer) as CryptoKeyPair);
    const signed = await signRequest(request, keys.privateKey, new URL(keyId(signing.signer)), {
      spec: "draft-cavage-http-signatures-12",
    });
    signed.headers.forEach((value, name) => {
      headers[name] = value;
    });
  }
  return server.request("POST", path, { headers, payload: body });
}

/** How many messages of `held`'s queue hold the activity `id` received (none is ever handled there). */
async function queuedOnHeld(id: string): Promise<number> {
  const rows = await held.services.db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM federation_messages
    WHERE message->>'type' = 'inbox' AND message->'activity'->>'id' = ${`${peerUrl}/follows/${id}`}`;
  return rows[0].n;
}

const heldAliceUri = () => `${PUBLIC_URL}/accounts/${heldAlice.id}`;

describe("an inbox POST", () => {
  it("signed by a valid key of another actor than its `actor` is 401 and queues nothing, on either inbox", async () => {
    const paths = ["/inbox", `/accounts/${heldAlice.id}/inbox`];
    for (const [n, path] of paths.entries()) {
      // Mallory's key, whose signature verifies, on a Follow by eve.
      const forged = follow("eve", `forged-${n}`, heldAliceUri());
      const answer = await post(held, PUBLIC_URL, path, forged, { signer: "mallory" });
      expect(answer.status, path).toBe(401);
      expect(answer.body).toEqual({ error: "UNAUTHORIZED" });
      expect(await queuedOnHeld(`forged-${n}`)).toBe(0);
      // Signed by eve's own key, the same activity is taken.
      const own = await post(held, PUBLIC_URL, path, forged, { signer: "eve" });
      expect(own.status, path).toBe(202);
      expect(await queuedOnHeld(`forged-${n}`)).toBe(1);
    }
  });

  it("unsigned, or signed over other bytes than its body, is 401 and queues nothing", async () => {
    const unsigned = await post(held, PUBLIC_URL, "/inbox", follow("mallory", "unsigned", heldAliceUri()));
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toEqual({ error: "UNAUTHORIZED" });
    const signed = follow("mallory", "other", heldAliceUri());
    const headers: Record<string, string> = {};
    const request = await signRequest(
      new Request(`${PUBLIC_URL}/inbox`, { method: "POST", headers: { "content-type": AP }, body: signed }),
      (peerKeys.get("mallory") as CryptoKeyPair).privateKey,
      new URL(keyId("mallory")),
      { spec: "draft-cavage-http-signatures-12" },
    );
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const tampered = await held.request("POST", "/inbox", {
      headers,
      payload: follow("mallory", "tampered", heldAliceUri()),
    });
    expect(tampered.status).toBe(401);
    expect(await queuedOnHeld("unsigned")).toBe(0);
    expect(await queuedOnHeld("tampered")).toBe(0);
  });

  it("signed by a rotated key is taken: the key kept from before fails, and is fetched again once", async () => {
    const old = peerKeys.get("rita") as CryptoKeyPair;
    expect(
      (await post(held, PUBLIC_URL, "/inbox", follow("rita", "r1", heldAliceUri()), { signer: "rita" })).status,
    ).toBe(202);
    const fetches = () => peerGets.filter((path) => path === "/users/rita").length;
    const before = fetches();
    // Kept: a second activity signed by the same key fetches nothing.
    expect(
      (await post(held, PUBLIC_URL, "/inbox", follow("rita", "r2", heldAliceUri()), { signer: "rita" })).status,
    ).toBe(202);
    expect(fetches()).toBe(before);

    peerKeys.set("rita", await rsaKeyPair());
    const rotated = await post(held, PUBLIC_URL, "/inbox", follow("rita", "r3", heldAliceUri()), { signer: "rita" });
    expect(rotated.status).toBe(202);
    expect(fetches()).toBe(before + 1);
    expect(await queuedOnHeld("r3")).toBe(1);

    // The old key no longer verifies: fetched again once more, and refused.
    const stale = await post(held, PUBLIC_URL, "/inbox", follow("rita", "r4", heldAliceUri()), {
      signer: "rita",
      keys: old,
    });
    expect(stale.status).toBe(401);
    expect(fetches()).toBe(before + 2);
    expect(await queuedOnHeld("r4")).toBe(0);
  });

  it("over 1 MiB is 413 PAYLOAD_TOO_LARGE and queues nothing, however well signed", async () => {
    const big = follow("mallory", "big", heldAliceUri(), "x".repeat(1024 * 1024));
    const answer = await post(held, PUBLIC_URL, "/inbox", big, { signer: "mallory" });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ error: "PAYLOAD_TOO_LARGE" });
    expect(await queuedOnHeld("big")).toBe(0);
  });

  it("whose signature is dated more than an hour from now, before or after, is 401 and queues nothing", async () => {
    const hours = (n: number) => new Date(Date.now() + n * 3_600_000);
    for (const [id, date] of [
      ["past", hours(-2)],
      ["future", hours(2)],
    ] as const) {
      const answer = await post(held, PUBLIC_URL, "/inbox", follow("mallory", id, heldAliceUri()), {
        signer: "mallory",
        date,
      });
      expect(answer.status, id).toBe(401);
      expect(await queuedOnHeld(id)).toBe(0);
    }
  });

  it("received twice, on one inbox or both, is handled once: one follow, one Accept", async () => {
    const aliceUri = `${a.url}/accounts/${alice.id}`;
    const once = follow("mallory", "once", aliceUri);
    for (const path of ["/inbox", "/inbox", `/accounts/${alice.id}/inbox`]) {
      const answer = await post(a, a.url, path, once, { signer: "mallory" });
      expect(answer.status, path).toBe(202);
    }
    const accepts = (id: string) =>
      peerPosts.filter((activity) => activity.type === "Accept" && (activity.object?.id ?? activity.object) === id);
    const onceId = `${peerUrl}/follows/once`;
    await expect.poll(() => accepts(onceId).length, WAIT).toBeGreaterThan(0);
    // Settled: nothing received is left to handle, nothing of alice's left to send.
    const pending = async () => {
      const rows = await a.services.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM federation_messages
        WHERE message->'activity'->>'id' = ${onceId} OR message->>'activityId' LIKE ${`${aliceUri}#%`}`;
      return rows[0].n + (await a.services.db.federationOutbox.count({ where: { sender: BigInt(alice.id) } }));
    };
    await expect.poll(pending, WAIT).toBe(0);
    expect(accepts(onceId)).toHaveLength(1);
    const mallory = await a.services.db.account.findUniqueOrThrow({ where: { uri: actorUri("mallory") } });
    expect(await a.services.db.follow.count({ where: { followerId: mallory.id, followeeId: BigInt(alice.id) } })).toBe(
      1,
    );

    // The control: a Follow with another id is answered again (docs/federation.md: a Follow already
    // followed is accepted again), so the single Accept above is the duplicate dropped.
    const againId = `${peerUrl}/follows/again`;
    expect((await post(a, a.url, "/inbox", follow("mallory", "again", aliceUri), { signer: "mallory" })).status).toBe(
      202,
    );
    await expect.poll(() => accepts(againId).length, WAIT).toBe(1);
    expect(accepts(onceId)).toHaveLength(1);
  });
});

describe("a remote name in GraphQL", () => {
  const FOLLOW = `mutation ($name: String!) {
    follow(name: $name) { ... on MutationFollowSuccess { data { pending } } ... on DomainError { code } } }`;
  const UNFOLLOW = `mutation ($name: String!) {
    unfollow(name: $name) { ... on MutationUnfollowSuccess { data } ... on DomainError { code } } }`;
  const BLOCK = `mutation ($name: String!) {
    block(name: $name) { ... on MutationBlockSuccess { data } ... on DomainError { code } } }`;
  const REQUESTS = `query { followRequests { ... on AccountConnection { edges { node { name } } } ... on DomainError { code } } }`;

  it("follow and unfollow cross to its server", async () => {
    const followed = await gql(a, FOLLOW, { name: `@carol@${bHost}` }, alice);
    expect(followed.follow).toEqual({ data: { pending: true } });
    await expect.poll(() => followers(b, carol), WAIT).toEqual([`@alice@${aHost}`]);
    const following = async () =>
      ((await a.request("GET", "/accounts/alice/following", { token: alice.token })).body as { name: string }[]).map(
        (account) => account.name,
      );
    await expect.poll(following, WAIT).toEqual([`@carol@${bHost}`]);

    const unfollowed = await gql(a, UNFOLLOW, { name: `@carol@${bHost}` }, alice);
    expect(unfollowed.unfollow).toEqual({ data: true });
    await expect.poll(() => followers(b, carol), WAIT).toEqual([]);
    expect(await following()).toEqual([]);
  });

  it("a follow of a locked remote account is a request its owner reads in GraphQL's followRequests", async () => {
    const followed = await gql(a, FOLLOW, { name: `@dave@${bHost}` }, alice);
    expect(followed.follow).toEqual({ data: { pending: true } });
    const requesters = async () =>
      (await gql(b, REQUESTS, {}, dave)).followRequests.edges.map((edge: { node: { name: string } }) => edge.node.name);
    await expect.poll(requesters, WAIT).toEqual([`@alice@${aHost}`]);
  });

  it("block reaches its server: the blocked account cannot follow back", async () => {
    const blocked = await gql(a, BLOCK, { name: `@carol@${bHost}` }, alice);
    expect(blocked.block).toEqual({ data: true });
    await expect.poll(() => b.services.db.block.count({ where: { blockedId: BigInt(carol.id) } }), WAIT).toBe(1);
    const refused = await gql(b, FOLLOW, { name: `@alice@${aHost}` }, carol);
    expect(refused.follow).toEqual({ code: "YOU_ARE_BLOCKED" });
  });
});

describe("delivery to a server that is stopped", () => {
  it("a Follow queued while it is down reaches it once it is back on its address and database; the Accept comes back", async () => {
    // A knows bob from before: the follow needs nothing of B at the time.
    expect((await a.request("GET", `/accounts/@bob@${bHost}`)).status).toBe(200);
    const port = Number(new URL(b.url).port);
    const database = b.databaseUrl;
    const stopped = b;
    await close(stopped);

    const answer = await a.request("POST", `/accounts/@bob@${bHost}/follow`, { token: erin.token, body: {} });
    expect(answer.body).toEqual({ pending: true });
    const request = await a.services.db.followRequest.findFirstOrThrow({ where: { requesterId: BigInt(erin.id) } });
    // Tried, refused (nothing listens at B's address), and queued again.
    const attempts = async () => {
      const rows = await a.services.db.$queryRaw<{ attempt: number }[]>`
        SELECT (message->>'attempt')::int AS attempt FROM federation_messages
        WHERE message->>'activityId' = ${request.activityUri}`;
      return rows[0]?.attempt ?? 0;
    };
    await expect.poll(attempts, WAIT).toBeGreaterThan(0);

    b = await listening("127.0.0.2", { port, databaseUrl: database });
    // Read as anyone: a session's token does not outlive its server's data directory.
    const bobs = async () =>
      ((await b.request("GET", "/accounts/bob/followers")).body as { name: string }[]).map((account) => account.name);
    await expect.poll(bobs, WAIT).toEqual([`@erin@${aHost}`]);
    const following = async () =>
      ((await a.request("GET", "/accounts/erin/following", { token: erin.token })).body as { name: string }[]).map(
        (account) => account.name,
      );
    await expect.poll(following, WAIT).toEqual([`@bob@${bHost}`]);
    expect(await a.services.db.followRequest.count({ where: { requesterId: BigInt(erin.id) } })).toBe(0);
  }, 60_000);
});

async function followers(server: TestServer, who: TestAccount): Promise<string[]> {
  const answer = await server.request("GET", `/accounts/${who.name}/followers`, { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { name: string }[]).map((account) => account.name);
}
