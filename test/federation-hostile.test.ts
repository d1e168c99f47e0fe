// Hostile and dead servers (docs/federation.md#signatures, #delivery). Inbox POSTs: a server over
// FEDERATION_INBOX_RATE is 429 with Retry-After before its POST is read, a large body counting
// more, counted once across a fleet sharing Redis, and no per-address limit holds back a server
// within its rate (unsigned POSTs are counted by address); what checking one server's POSTs fetches (keys again and again, JSON-LD
// contexts of its choosing) is bounded per server; garbage (bad JSON, deep nesting, unknown types,
// a note claiming another origin or another author) changes nothing (huge arrays of mentions:
// test/federation-receive.test.ts). Deliveries: a paused server does not end its pause by sending
// to us, and when it answers again it never has more than FEDERATION_HOST_CONCURRENCY deliveries
// at once.
//
// Servers: `gate` works no queue (FEDERATION_QUEUE=off), so that what its inboxes took stays queued
// to be counted, with low bounds; `murmur` works its queue and delivers. Remote servers are played
// by `Remote`, a small HTTP server of this file on an address of its own.
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type Federation, signRequest } from "@fedify/fedify";
import { Create, Note, PUBLIC_COLLECTION } from "@fedify/fedify/vocab";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createMurmurFederation, type FederationData } from "../src/federation/federation.ts";
import { PostgresKvStore } from "../src/federation/kv-store.ts";
import { PostgresMessageQueue } from "../src/federation/message-queue.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { redisAvailable, startRedis, type TestRedis } from "./support/redis.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const AP = "application/activity+json";
const AS = "https://www.w3.org/ns/activitystreams";
const WAIT = { timeout: 20_000, interval: 50 };
/** FEDERATION_PAUSE_MS of `murmur`: long enough to look at a paused server before it is tried again. */
const PAUSE_MS = 4_000;
/** FEDERATION_HOST_CONCURRENCY of `murmur`; its queue works 4 messages at once. */
const HOST_CONCURRENCY = 2;

/**
 * Another server: its actors (each with its current key), documents it serves as given, and an
 * inbox that answers `mode` (202, or a status), `delayMs` after a POST came; it counts its GETs and
 * the POSTs in flight.
 */
class Remote {
  readonly keys = new Map<string, CryptoKeyPair>();
  readonly documents = new Map<string, unknown>();
  readonly gets: string[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: activities are read field by field
  readonly posts: { activity: any; status: number }[] = [];
  mode: "accept" | number = "accept";
  delayMs = 0;
  inFlight = 0;
  maxInFlight = 0;
  port = 0;
  private server?: http.Server;

  constructor(readonly address: string) {}

  get url(): string {
    return `http://${this.address}:${this.port}`;
  }

  actor(name: string): string {
    return `${this.url}/users/${name}`;
  }

  keyId(name: string): string {
    return `${this.actor(name)}#main-key`;
  }

  /** GETs of `path` so far. */
  got(path: string): number {
    return this.gets.filter((one) => one === path).length;
  }

  async start(...names: string[]): Promise<void> {
    for (const name of names) this.keys.set(name, await rsaKeyPair());
    this.server = http.createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, this.address, resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** `body` POSTed to `path` of `server`, signed draft-cavage by actor `signer` (with `keys`, its own by default). */
  async post(server: TestServer, path: string, body: string, signer: string, keys?: CryptoKeyPair) {
    const origin = server.services.config.publicUrl;
    const request = await signRequest(
      new Request(`${origin}${path}`, { method: "POST", headers: { "content-type": AP }, body }),
      (keys ?? (this.keys.get(signer) as CryptoKeyPair)).privateKey,
      new URL(this.keyId(signer)),
      { spec: "draft-cavage-http-signatures-12" },
    );
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    return server.request("POST", path, { headers, payload: body });
  }

  private async answer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const path = new URL(request.url ?? "/", this.url).pathname;
    if (request.method === "POST") {
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const status = this.mode === "accept" ? 202 : this.mode;
      this.posts.push({ activity: JSON.parse(Buffer.concat(chunks).toString()), status });
      this.inFlight--;
      response.writeHead(status).end();
      return;
    }
    this.gets.push(path);
    const name = /^\/users\/(\w+)$/.exec(path)?.[1];
    const keys = name ? this.keys.get(name) : undefined;
    if (name && keys) {
      const pem = KeyObject.from(keys.publicKey).export({ type: "spki", format: "pem" }).toString();
      return void response.writeHead(200, { "content-type": AP }).end(
        JSON.stringify({
          "@context": [AS, "https://w3id.org/security/v1"],
          id: this.actor(name),
          type: "Person",
          preferredUsername: name,
          inbox: `${this.actor(name)}/inbox`,
          followers: `${this.actor(name)}/followers`,
          publicKey: { id: this.keyId(name), owner: this.actor(name), publicKeyPem: pem },
        }),
      );
    }
    const document = this.documents.get(path);
    if (document === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { "content-type": "application/ld+json" }).end(JSON.stringify(document));
  }
}

let gate: TestServer;
let murmur: ListeningServer;
let alice: TestAccount;
const remotes: Remote[] = [];

async function remote(address: string, ...names: string[]): Promise<Remote> {
  const one = new Remote(address);
  await one.start(...names);
  remotes.push(one);
  return one;
}

async function close(server: TestServer | undefined): Promise<void> {
  await closeFederating(server);
}

beforeAll(async () => {
  [gate, murmur] = await Promise.all([
    startTestServer({
      FEDERATION_QUEUE: "off",
      FEDERATION_ALLOW_PRIVATE: "true",
      FEDERATION_INBOX_RATE: "5",
      FEDERATION_INBOX_FETCH_RATE: "3",
      // The general limits on: 3 requests from one address per 5 minutes, which inbox POSTs are not held to.
      RATE_LIMIT_MULTIPLIER: "0.01",
    }),
    listening("127.0.0.2", {
      env: {
        FEDERATION_RETRY_MS: "50",
        FEDERATION_PAUSE_MS: String(PAUSE_MS),
        FEDERATION_HOST_CONCURRENCY: String(HOST_CONCURRENCY),
      },
    }),
  ]);
  ({ alice } = await cast(murmur, { alice: "alice" }));
}, 60_000);

afterAll(async () => {
  for (const one of remotes) await one.stop();
  await close(gate);
  await close(murmur);
});

let sequence = 0;

/** A Follow by `from`'s actor `name` (of an actor of nobody's here: `gate` handles nothing). */
function follow(from: Remote, name: string): { id: string; body: string } {
  const id = `${from.url}/follows/${++sequence}`;
  const body = JSON.stringify({
    "@context": AS,
    id,
    type: "Follow",
    actor: from.actor(name),
    object: from.actor(name),
  });
  return { id, body };
}

/** How many messages of `server`'s queue hold the received activity `id`. */
async function queued(server: TestServer, id: string): Promise<number> {
  const rows = await server.services.db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM federation_messages
    WHERE message->>'type' = 'inbox' AND message->'activity'->>'id' = ${id}`;
  return rows[0].n;
}

describe("inbox POSTs from one server", () => {
  it("past FEDERATION_INBOX_RATE a minute are 429 RATE_LIMITED with Retry-After, before anything is queued; other servers go on", async () => {
    const flood = await remote("127.0.0.3", "flood");
    const other = await remote("127.0.0.4", "calm");
    const answers = [];
    for (let n = 0; n < 7; n++) {
      const { id, body } = follow(flood, "flood");
      answers.push({ id, answer: await flood.post(gate, "/inbox", body, "flood") });
    }
    // Five taken, though the general limits allow an address three requests: a server is counted by its key's host.
    expect(answers.map(({ answer }) => answer.status)).toEqual([202, 202, 202, 202, 202, 429, 429]);
    for (const { id, answer } of answers.slice(5)) {
      expect(answer.body).toEqual({ error: "RATE_LIMITED" });
      const wait = Number(answer.headers["retry-after"]);
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(60);
      expect(await queued(gate, id)).toBe(0);
    }
    expect(await queued(gate, answers[0].id)).toBe(1);
    const calm = follow(other, "calm");
    expect((await other.post(gate, "/inbox", calm.body, "calm")).status).toBe(202);
  });
});

describe("unsigned inbox POSTs", () => {
  it("are counted by address, and what reading them fetches is bounded: 401, then 429", async () => {
    const statuses = [];
    const hosts: Remote[] = [];
    for (let n = 0; n < 6; n++) {
      // The first four each name a context on a host of their own: only the unsigned POSTs' own
      // bound holds. The last two name none.
      const host = await remote(`127.0.0.${30 + n}`);
      host.documents.set("/context", { "@context": { murmurTest: "https://example.com/ns#" } });
      hosts.push(host);
      const body = JSON.stringify({
        "@context": n < 4 ? [AS, `${host.url}/context`] : AS,
        id: `${host.url}/follows/unsigned`,
        type: "Follow",
        actor: `${host.url}/users/nobody`,
        object: `${host.url}/users/nobody`,
      });
      statuses.push((await gate.request("POST", "/inbox", { headers: { "content-type": AP }, payload: body })).status);
    }
    // Three contexts fetched (FEDERATION_INBOX_FETCH_RATE), five POSTs read (FEDERATION_INBOX_RATE).
    expect(statuses).toEqual([401, 401, 401, 429, 401, 429]);
    expect(hosts.map((host) => host.gets.length)).toEqual([1, 1, 1, 0, 0, 0]);
  });
});

describe("inbox POSTs of large bodies", () => {
  it("count once more for every 16 KiB they carry", async () => {
    const bulky = await remote("127.0.0.14", "bulky");
    const statuses = [];
    for (let n = 0; n < 2; n++) {
      // 40 KiB: three counts of the rate of 5.
      const padded = JSON.stringify({ ...JSON.parse(follow(bulky, "bulky").body), summary: "x".repeat(40 * 1024) });
      statuses.push((await bulky.post(gate, "/inbox", padded, "bulky")).status);
    }
    expect(statuses).toEqual([202, 429]);
  });
});

describe.skipIf(!redisAvailable)("inbox POSTs across a fleet sharing Redis", () => {
  let redis: TestRedis;
  let fleet: TestServer[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      FEDERATION_QUEUE: "off",
      FEDERATION_ALLOW_PRIVATE: "true",
      FEDERATION_INBOX_RATE: "4",
      REDIS_URL: redis.url,
    };
    fleet = await Promise.all([startTestServer(env), startTestServer(env)]);
  }, 60_000);

  afterAll(async () => {
    for (const server of fleet) await close(server);
    await redis?.stop();
  });

  it("count one server once, whichever instance each POST reaches", async () => {
    const busy = await remote("127.0.0.5", "busy");
    const statuses = [];
    for (let n = 0; n < 6; n++)
      statuses.push((await busy.post(fleet[n % 2], "/inbox", follow(busy, "busy").body, "busy")).status);
    expect(statuses).toEqual([202, 202, 202, 202, 429, 429]);
  });
});

describe("what checking one server's POSTs fetches", () => {
  it("a rotated key is fetched again, up to FEDERATION_INBOX_FETCH_RATE fetches a minute; past it 429 with Retry-After, fetching nothing", async () => {
    const rotating = await remote("127.0.0.6", "rot");
    const fetches = () => rotating.got("/users/rot");
    const statuses = [];
    for (let n = 0; n < 4; n++) {
      // A new key at each POST: the one kept fails, and is fetched again.
      if (n > 0) rotating.keys.set("rot", await rsaKeyPair());
      statuses.push((await rotating.post(gate, "/inbox", follow(rotating, "rot").body, "rot")).status);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    expect(fetches()).toBe(3);
    // Signed with a key that no longer verifies: nothing fetched either, and nothing taken.
    const stale = follow(rotating, "rot");
    const answer = await rotating.post(gate, "/inbox", stale.body, "rot", await rsaKeyPair());
    expect(answer.status).toBe(429);
    expect(answer.body).toEqual({ error: "RATE_LIMITED" });
    expect(Number(answer.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(fetches()).toBe(3);
    expect(await queued(gate, stale.id)).toBe(0);
  });

  it("JSON-LD contexts a POST names at URLs of the sender's choosing count the same: fetched within the bound, refused past it", async () => {
    const sender = await remote("127.0.0.7", "ctx");
    const ids = [];
    const statuses = [];
    for (let n = 1; n <= 4; n++) {
      sender.documents.set(`/contexts/${n}`, { "@context": { murmurTest: `https://example.com/ns#${n}` } });
      const id = `${sender.url}/follows/ctx-${n}`;
      const body = JSON.stringify({
        "@context": [AS, `${sender.url}/contexts/${n}`],
        id,
        type: "Follow",
        actor: sender.actor("ctx"),
        object: sender.actor("ctx"),
      });
      ids.push(id);
      statuses.push((await sender.post(gate, "/inbox", body, "ctx")).status);
    }
    // A context, the key, another context: three fetches in all.
    expect(sender.gets).toEqual(["/contexts/1", "/users/ctx", "/contexts/2"]);
    expect(statuses).toEqual([202, 202, 429, 429]);
    for (const id of ids.slice(2)) expect(await queued(gate, id)).toBe(0);
  });

  it("contexts fetched from one host are bounded too, whichever servers name them", async () => {
    const victim = await remote("127.0.0.15");
    const statuses = [];
    for (let n = 1; n <= 4; n++) {
      // A server of its own each time: no sender is past its own bound.
      const sender = await remote(`127.0.0.${15 + n}`, "namer");
      victim.documents.set(`/contexts/${n}`, { "@context": { murmurTest: `https://example.com/ns#${n}` } });
      const body = JSON.stringify({
        "@context": [AS, `${victim.url}/contexts/${n}`],
        id: `${sender.url}/follows/named`,
        type: "Follow",
        actor: sender.actor("namer"),
        object: sender.actor("namer"),
      });
      statuses.push((await sender.post(gate, "/inbox", body, "namer")).status);
    }
    expect(victim.gets).toEqual(["/contexts/1", "/contexts/2", "/contexts/3"]);
    expect(statuses).toEqual([202, 202, 202, 429]);
  });

  it("a context that cannot be loaded is 400 INVALID_REQUEST, not a 500, and nothing is queued", async () => {
    const sender = await remote("127.0.0.8", "lost");
    const id = `${sender.url}/follows/lost`;
    const body = JSON.stringify({
      "@context": [AS, `${sender.url}/contexts/none`],
      id,
      type: "Follow",
      actor: sender.actor("lost"),
      object: sender.actor("lost"),
    });
    const answer = await sender.post(gate, "/inbox", body, "lost");
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    expect(await queued(gate, id)).toBe(0);
  });
});

describe("a server that stops answering, and comes back", () => {
  let federation: Federation<FederationData>;
  let kv: PostgresKvStore;
  let queue: PostgresMessageQueue;
  let admin: pg.Client;

  beforeAll(async () => {
    // `murmur`'s outgoing side, as its web process has it: activities enqueued on its database,
    // which `murmur` itself delivers.
    kv = new PostgresKvStore(murmur.databaseUrl);
    queue = new PostgresMessageQueue({ databaseUrl: murmur.databaseUrl, log: pino({ level: "silent" }) });
    federation = createMurmurFederation(murmur.services, { kv, queue });
    admin = new pg.Client({ connectionString: murmur.databaseUrl });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await queue?.close();
    await kv?.close();
  });

  /** A Create(Note) from alice to `to`'s inbox, each with an ordering key of its own (else one at a time); its id. */
  async function send(to: Remote): Promise<string> {
    const ctx = federation.createContext(new URL(murmur.url), murmur.services);
    const actor = ctx.getActorUri(alice.id);
    const id = `${actor.href}#hostile/${++sequence}`;
    const note = new Note({ id: new URL(`${id}/note`), attribution: actor, to: PUBLIC_COLLECTION });
    await ctx.sendActivity(
      { identifier: alice.id },
      { id: new URL(to.actor("dead")), inboxId: new URL(`${to.url}/inbox`) },
      new Create({ id: new URL(id), actor, object: note, to: PUBLIC_COLLECTION }),
      { orderingKey: id },
    );
    return id;
  }

  /** Fedify's pause of `to` as kept in the key-value store, shared by the fleet. */
  async function pauseOf(to: Remote): Promise<{ state: string; opened?: string } | undefined> {
    const { rows } = await admin.query<{ value: { state: string; opened?: string } }>(
      "SELECT value FROM federation_kv WHERE key = $1",
      [JSON.stringify(["_fedify", "circuit", `${to.address}:${to.port}`])],
    );
    return rows[0]?.value;
  }

  /** Queued messages of activity `id`, and whether each is held for a paused server. */
  async function held(id: string): Promise<boolean[]> {
    const { rows } = await admin.query<{ held: boolean }>(
      `SELECT coalesce((message->>'circuitHeld')::boolean, false) AS held
       FROM federation_messages WHERE message->>'activityId' = $1`,
      [id],
    );
    return rows.map((row) => row.held);
  }

  it("it cannot end its pause by sending to us; back, it is sent what was held, never more than FEDERATION_HOST_CONCURRENCY at once", async () => {
    const dead = await remote("127.0.0.9", "dead");
    dead.mode = 503;
    const first = await send(dead);
    await vi.waitFor(async () => expect((await pauseOf(dead))?.state).toBe("open"), WAIT);
    const ids = [first];
    for (let n = 0; n < 11; n++) ids.push(await send(dead));
    await vi.waitFor(
      async () => expect((await Promise.all(ids.slice(1).map(held))).flat()).toEqual(ids.slice(1).map(() => true)),
      WAIT,
    );
    const tried = dead.posts.length;

    // It sends us a signed activity, taken and handled: its pause stays as it was, nothing held is tried.
    const create = {
      "@context": AS,
      id: `${dead.url}/notes/1/activity`,
      type: "Create",
      actor: dead.actor("dead"),
      object: { id: `${dead.url}/notes/1`, type: "Note", attributedTo: dead.actor("dead"), content: "hello" },
    };
    expect((await dead.post(murmur, "/inbox", JSON.stringify(create), "dead")).status).toBe(202);
    await vi.waitFor(async () => expect(await queued(murmur, create.id)).toBe(0), WAIT);
    // Still paused (or, should the pause have run out meanwhile, being probed), and whatever was
    // tried meanwhile was a probe that failed: no held delivery let go.
    expect((await pauseOf(dead))?.state).toMatch(/^(open|half-open)$/);
    expect(dead.posts.slice(tried).every((post) => post.status === 503)).toBe(true);

    // Back, and slow: each POST answered after 200 ms. The queue works 4 messages at once.
    dead.delayMs = 200;
    dead.mode = "accept";
    await vi.waitFor(
      () =>
        expect(new Set(dead.posts.filter((post) => post.status === 202).map((post) => post.activity.id))).toEqual(
          new Set(ids),
        ),
      { timeout: 30_000, interval: 100 },
    );
    expect(dead.maxInFlight).toBeLessThanOrEqual(HOST_CONCURRENCY);
    expect(await pauseOf(dead)).toBeUndefined();
  }, 60_000);
});

describe("garbage", () => {
  /** Once `murmur` has handled (or dropped) what it queued of activity `id`. */
  async function handled(id: string): Promise<void> {
    await vi.waitFor(async () => expect(await queued(murmur, id)).toBe(0), WAIT);
  }

  it("bad JSON, a body nested too deep, an unknown type, an object without a type: 400 INVALID_REQUEST or taken, never a 500, and nothing changes", async () => {
    const junk = await remote("127.0.0.10", "junk");
    const actor = junk.actor("junk");
    const activity = (n: number, object: string) =>
      `{"@context":"${AS}","id":"${junk.url}/activities/${n}","type":"Create","actor":"${actor}","object":${object}}`;
    const refused = {
      "bad JSON": `{"@context":"${AS}","id":"${junk.url}/activities/0","type":"Create",`,
      // 100,000 arrays in arrays, 200 kB; 20,000 notes replying to notes, 560 kB.
      "arrays nested deep": activity(1, `${"[".repeat(100_000)}${"]".repeat(100_000)}`),
      "objects nested deep": activity(2, `${'{"type":"Note","inReplyTo":'.repeat(20_000)}null${"}".repeat(20_000)}`),
    };
    for (const [what, body] of Object.entries(refused)) {
      const answer = await junk.post(murmur, "/inbox", body, "junk");
      expect(answer.status, what).toBe(400);
      expect(answer.body, what).toEqual({ error: "INVALID_REQUEST" });
    }
    const taken = {
      "an unknown type": `{"@context":"${AS}","id":"${junk.url}/activities/3","type":"Frobnicate","actor":"${actor}","object":"${murmur.url}/accounts/${alice.id}"}`,
      // Brackets in a string, after an escaped quote, are no nesting.
      "an object without a type": activity(
        4,
        `{"id":"${junk.url}/notes/4","content":"\\"${"[{".repeat(1000)}","attributedTo":"${actor}"}`,
      ),
    };
    for (const [what, body] of Object.entries(taken)) {
      expect((await junk.post(murmur, "/inbox", body, "junk")).status, what).toBe(202);
    }
    for (let n = 0; n <= 4; n++) await handled(`${junk.url}/activities/${n}`);
    expect(await murmur.services.db.account.count({ where: { host: `${junk.address}:${junk.port}` } })).toBe(0);
    expect(await murmur.services.db.note.count({ where: { uri: { startsWith: junk.url } } })).toBe(0);
  });

  it("a Create whose note is of another origin, or of another author, stores nothing; the author's own note of its origin is stored", async () => {
    const a = await remote("127.0.0.11", "amy", "ann");
    const b = await remote("127.0.0.12", "bea");
    const aliceUri = `${murmur.url}/accounts/${alice.id}`;
    const note = (id: string, author: string) => ({
      id,
      type: "Note",
      attributedTo: author,
      content: `<p>for <a href="${aliceUri}">@alice</a></p>`,
      to: [PUBLIC_COLLECTION.href],
      cc: [aliceUri],
      tag: [{ type: "Mention", href: aliceUri }],
    });
    // A note that exists on b, by bea.
    b.documents.set("/notes/real", { "@context": AS, ...note(`${b.url}/notes/real`, b.actor("bea")) });
    const claims = {
      "b's note, as amy's": note(`${b.url}/notes/real`, a.actor("amy")),
      "a note of b's origin, as amy's": note(`${b.url}/notes/made-up`, a.actor("amy")),
      "a note of b's origin, as bea's": note(`${b.url}/notes/bea`, b.actor("bea")),
      "ann's note, sent by amy": note(`${a.url}/notes/ann`, a.actor("ann")),
    };
    const own = note(`${a.url}/notes/own`, a.actor("amy"));
    for (const [what, object] of [...Object.entries(claims), ["amy's own", own] as const]) {
      const id = `${a.url}/activities/${encodeURIComponent(what)}`;
      const body = JSON.stringify({ "@context": AS, id, type: "Create", actor: a.actor("amy"), object });
      expect((await a.post(murmur, "/inbox", body, "amy")).status, what).toBe(202);
      await handled(id);
    }
    const stored = await murmur.services.db.note.findMany({
      where: { uri: { in: [...Object.values(claims).map((claim) => claim.id), own.id] } },
      select: { uri: true },
    });
    expect(stored).toEqual([{ uri: own.id }]);
  });
});
