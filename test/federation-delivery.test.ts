// Deliveries (docs/federation.md#delivery): a Murmur server on 127.0.0.2 sends activities to
// inboxes played by small HTTP servers of this file on 127.0.0.3, which check each POST's signature
// with Fedify's verifyRequest (fetching the sender's key from the Murmur server). An activity
// queued while its server is down arrives once it is back; a 410 stops retries at once; a server
// that keeps failing is paused, the next activity held unattempted until it answers; a POST to a
// private address is refused without FEDERATION_ALLOW_PRIVATE; with FEDERATION_QUEUE=off a server
// only enqueues and `murmur worker` delivers.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createExponentialBackoffPolicy, type Federation, type RetryPolicy } from "@fedify/fedify";
import { Update } from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { deliver, deliveryRetryPolicy, RETRY_FOR_MS } from "../src/federation/delivery.ts";
import { createMurmurFederation, type FederationData } from "../src/federation/federation.ts";
import { PostgresKvStore } from "../src/federation/kv-store.ts";
import { PostgresMessageQueue } from "../src/federation/message-queue.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, freePort, receivedPost } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { start } from "./support/process.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

/** The only answers of this file's server not in openapi.json (docs/federation.md). */
const FEDERATION_ANSWER = /^GET \/(\.well-known\/|accounts\/)/;
const WAIT = { timeout: 20_000, interval: 50 };
/** A paused server is tried again after this long here (FEDERATION_PAUSE_MS; an hour's half in production). */
const PAUSE_MS = 3_000;

/** One POST an inbox of this file was sent. */
interface Post {
  activityId: string;
  userAgent: string;
  verified: boolean;
  /** Which signature it carried: Fedify knocks again with the other on a 400 or any status above 401. */
  spec: "rfc9421" | "draft-cavage";
  status: number;
}

/**
 * A peer's inbox on 127.0.0.3: answers 202 to a POST whose signature verifies (401 otherwise),
 * or `mode`'s status whatever it is sent. Stopped and started again on the same port.
 */
class Inbox {
  readonly posts: Post[] = [];
  mode: "accept" | number = "accept";
  port = 0;
  private server?: http.Server;

  get url(): string {
    return `http://127.0.0.3:${this.port}`;
  }

  /** The recipient Fedify is given: an actor of the peer, with this inbox. */
  get recipient() {
    return { id: new URL(`${this.url}/actor`), inboxId: new URL(`${this.url}/inbox`) };
  }

  postsOf(activityId: string): Post[] {
    return this.posts.filter((post) => post.activityId === activityId);
  }

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((resolve) => this.server?.listen(this.port, "127.0.0.3", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async answer(incoming: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const { body, verified } = await receivedPost(incoming, this.url);
    let activityId = "";
    try {
      activityId = JSON.parse(body.toString()).id ?? "";
    } catch {}
    const status = this.mode === "accept" ? (verified ? 202 : 401) : this.mode;
    const spec = incoming.headers["signature-input"] ? "rfc9421" : "draft-cavage";
    this.posts.push({ activityId, userAgent: incoming.headers["user-agent"] ?? "", verified, spec, status });
    response.writeHead(status).end();
  }
}

/** A server's outgoing side as a web process has it: activities enqueued on its database, never worked here. */
interface Sender {
  server: TestServer;
  url: string;
  account: TestAccount;
  federation: Federation<FederationData>;
  admin: pg.Client;
  close(): Promise<void>;
}

async function sender(env: Record<string, string>, listen: boolean): Promise<Sender> {
  const port = await freePort("127.0.0.2");
  const url = `http://127.0.0.2:${port}`;
  const server = await startTestServer({ PUBLIC_URL: url, FEDERATION_RETRY_MS: "50", ...env });
  if (listen) await server.app.listen({ port, host: "127.0.0.2" });
  const { alice: account } = await cast(server, { alice: "alice" });
  const kv = new PostgresKvStore(server.databaseUrl);
  const queue = new PostgresMessageQueue({ databaseUrl: server.databaseUrl, log: pino({ level: "silent" }) });
  const federation = createMurmurFederation(server.services, { kv, queue });
  const admin = new pg.Client({ connectionString: server.databaseUrl });
  await admin.connect();
  return {
    server,
    url,
    account,
    federation,
    admin,
    async close() {
      await admin.end();
      await queue.close();
      await kv.close();
      await closeFederating(server, FEDERATION_ANSWER);
    },
  };
}

let sequence = 0;

/** An Update of `from`'s actor, sent to `inbox` through the queue; its id. */
async function send(from: Sender, inbox: Inbox): Promise<string> {
  const ctx = from.federation.createContext(new URL(from.url), from.server.services);
  const actor = ctx.getActorUri(from.account.id);
  const id = `${actor.href}#updates/${++sequence}`;
  await deliver(ctx, from.account.id, inbox.recipient, new Update({ id: new URL(id), actor, object: actor }));
  return id;
}

/** The queued messages of activity `id`: its attempts so far, and whether the pause of its server holds it. */
async function queued(from: Sender, id: string): Promise<{ attempt: number; held: boolean }[]> {
  const { rows } = await from.admin.query<{ attempt: number; held: boolean }>(
    `SELECT (message->>'attempt')::int AS attempt, coalesce((message->>'circuitHeld')::boolean, false) AS held
     FROM federation_messages WHERE message->>'activityId' = $1`,
    [id],
  );
  return rows;
}

/** The pause state Fedify's circuit breaker keeps for `inbox`'s server, shared by the fleet in PostgreSQL. */
async function pauseOf(from: Sender, inbox: Inbox): Promise<string | undefined> {
  const { rows } = await from.admin.query<{ state: string }>(
    "SELECT value->>'state' AS state FROM federation_kv WHERE key = $1",
    [JSON.stringify(["_fedify", "circuit", `127.0.0.3:${inbox.port}`])],
  );
  return rows[0]?.state;
}

/** Once `id` was delivered to `inbox` and nothing of it is left queued (no retry is coming). */
async function settled(from: Sender, inbox: Inbox, id: string): Promise<void> {
  await vi.waitFor(async () => {
    expect(inbox.postsOf(id).length).toBeGreaterThan(0);
    expect(await queued(from, id)).toEqual([]);
  }, WAIT);
}

let a: Sender;
const inboxes: Inbox[] = [];

async function inbox(): Promise<Inbox> {
  const one = new Inbox();
  await one.start();
  inboxes.push(one);
  return one;
}

beforeAll(async () => {
  a = await sender({ FEDERATION_ALLOW_PRIVATE: "true", FEDERATION_PAUSE_MS: String(PAUSE_MS) }, true);
}, 60_000);

afterAll(async () => {
  for (const one of inboxes) await one.stop();
  await a?.close();
});

describe("delivery", () => {
  it("gets an activity queued while its server was down to it once it is back, signed, with Murmur's User-Agent", async () => {
    const peer = await inbox();
    await peer.stop();
    const id = await send(a, peer);
    // Tried, refused (nothing listens), and queued again.
    await vi.waitFor(async () => expect((await queued(a, id))[0]?.attempt).toBeGreaterThan(0), WAIT);
    await peer.start();
    await settled(a, peer, id);
    const accepted = peer.postsOf(id).filter((post) => post.status === 202);
    expect(accepted).toHaveLength(1);
    expect(accepted[0].verified).toBe(true);
    expect(accepted[0].userAgent).toMatch(/^Murmur\/\S+ .*\+http:\/\/127\.0\.0\.2:\d+\/?\)$/);
  });

  it("stops at once when the inbox answers 410 Gone", async () => {
    const peer = await inbox();
    peer.mode = 410;
    const id = await send(a, peer);
    await settled(a, peer, id);
    // One attempt: Fedify's double knock sends it once with each signature, then gives up for good.
    expect(peer.postsOf(id).map((post) => post.spec)).toEqual(["draft-cavage", "rfc9421"]);
  });

  it("pauses a server that keeps failing: the next activity is held, unattempted, until it answers again", async () => {
    const peer = await inbox();
    peer.mode = 503;
    // Five failures within ten minutes pause a server (Fedify's circuit breaker, here retried every ~50 ms).
    const failing = await send(a, peer);
    await vi.waitFor(async () => expect(await pauseOf(a, peer)).toBe("open"), WAIT);
    const failures = peer.postsOf(failing).length;
    expect(failures).toBeGreaterThanOrEqual(5);

    const next = await send(a, peer);
    await vi.waitFor(async () => expect(await queued(a, next)).toMatchObject([{ held: true }]), WAIT);
    expect(peer.postsOf(next)).toEqual([]);
    expect(peer.postsOf(failing)).toHaveLength(failures);

    // It answers again: after the pause one delivery probes it, and then both arrive.
    peer.mode = "accept";
    await settled(a, peer, next);
    await settled(a, peer, failing);
    expect(peer.postsOf(next).filter((post) => post.status === 202)).toHaveLength(1);
    expect(await pauseOf(a, peer)).toBeUndefined();
  });

  it("holds what waits for a paused server as one: at the pause's end it is moved, not claimed and queued again each", async () => {
    const peer = await inbox();
    peer.mode = 503;
    await send(a, peer);
    await vi.waitFor(async () => expect(await pauseOf(a, peer)).toBe("open"), WAIT);
    for (let n = 0; n < 30; n++) await send(a, peer);
    const waiting = async () =>
      (
        await a.admin.query<{ id: string; due: boolean }>(
          "SELECT id, run_at <= now() OR claimed_by IS NOT NULL AS due FROM federation_messages WHERE starts_with(message->>'inbox', $1)",
          [`${peer.url}/`],
        )
      ).rows;
    await vi.waitFor(async () => {
      const rows = await waiting();
      expect(rows.length).toBeGreaterThanOrEqual(30);
      expect(rows.filter((row) => row.due)).toEqual([]);
    }, WAIT);
    const before = new Set((await waiting()).map((row) => row.id));
    // The pause ends: one delivery probes it (503 again, paused again), the rest are held once more.
    const probes = peer.posts.length;
    await vi.waitFor(() => expect(peer.posts.length).toBeGreaterThan(probes), WAIT);
    await vi.waitFor(async () => {
      expect(await pauseOf(a, peer)).toBe("open");
      expect((await waiting()).filter((row) => row.due)).toEqual([]);
    }, WAIT);
    // Held each in turn, every one would be a new row (Fedify queues a held delivery again); moved
    // together, most keep theirs.
    const kept = (await waiting()).filter((row) => before.has(row.id));
    expect(kept.length).toBeGreaterThanOrEqual(20);
  });

  it("refuses to POST to a private address without FEDERATION_ALLOW_PRIVATE", async () => {
    const strict = await sender({}, false);
    try {
      const peer = await inbox();
      const id = await send(strict, peer);
      // Tried, refused before any connection, and queued again.
      await vi.waitFor(async () => expect((await queued(strict, id))[0]?.attempt).toBeGreaterThan(0), WAIT);
      expect(peer.posts).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it("with FEDERATION_QUEUE=off only enqueues; `murmur worker` on the same database delivers", async () => {
    const web = await sender({ FEDERATION_ALLOW_PRIVATE: "true", FEDERATION_QUEUE: "off" }, true);
    let worker: ChildProcess | undefined;
    try {
      const peer = await inbox();
      const id = await send(web, peer);
      // The web process's own queue is not worked: the message waits, unclaimed.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await queued(web, id)).toEqual([{ attempt: 0, held: false }]);
      expect(peer.posts).toEqual([]);

      worker = start("src/cli/main.ts", ["worker"], {
        DATABASE_URL: web.server.databaseUrl,
        PUBLIC_URL: web.url,
        FEDERATION_ALLOW_PRIVATE: "true",
        WORKER_ID: "2",
      });
      await settled(web, peer, id);
      expect(peer.postsOf(id).filter((post) => post.status === 202)).toHaveLength(1);
      const exited = once(worker, "exit");
      worker.kill("SIGTERM");
      expect((await exited)[0]).toBe(0);
      worker = undefined;
    } finally {
      worker?.kill("SIGKILL");
      await web.close();
    }
  });
});

describe("the retry policy", () => {
  /** Attempts made, and the time from the first to the last, of a delivery failing every time. */
  function schedule(policy: RetryPolicy): { attempts: number; spanMs: number } {
    let spanMs = 0;
    for (let attempts = 0; ; attempts++) {
      const delay = policy({ elapsedTime: Temporal.Duration.from({ milliseconds: spanMs }), attempts });
      if (delay === null) return { attempts: attempts + 1, spanMs };
      spanMs += delay.total("millisecond");
    }
  }

  it("tries a failing delivery for at least 48 hours, where Fedify's default gives up within the hour", () => {
    const fedify = schedule(createExponentialBackoffPolicy());
    expect(fedify.spanMs).toBeLessThan(3_600_000);
    const murmur = schedule(deliveryRetryPolicy(1_000));
    expect(murmur.spanMs).toBeGreaterThanOrEqual(RETRY_FOR_MS);
    // About hourly once the waits have grown: not hammering the server meanwhile.
    expect(murmur.attempts).toBeLessThan(80);
  });
});
