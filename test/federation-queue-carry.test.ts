// What the federation queue carries in its own statements (src/federation/message-queue.ts): the
// done of a handled message is written by the claim of the next, and the idempotence record a
// received activity's handler reads and writes (src/federation/kv-store.ts) is read by the claim
// and written by the done, in its transaction: about one statement a message, where each was three
// to five (bench/README.md, "Federation at scale"). Copies of one activity are still handled once.
import { Temporal } from "@js-temporal/polyfill";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotenceKey, PostgresKvStore } from "../src/federation/kv-store.ts";
import { PostgresMessageQueue, type PostgresMessageQueueOptions } from "../src/federation/message-queue.ts";
import { freshDatabase } from "./support/server.ts";

const WAIT = { timeout: 10_000, interval: 25 };
const log = pino({ level: "silent" });

let databaseUrl: string;
let admin: pg.Client;
let kv: PostgresKvStore;
const queues: PostgresMessageQueue[] = [];

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  kv = new PostgresKvStore(databaseUrl);
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await kv?.close();
  await admin?.end();
});

function queue(name: string, options: Partial<PostgresMessageQueueOptions> = {}): PostgresMessageQueue {
  const q = new PostgresMessageQueue({ databaseUrl, log, name, retryMs: 50, concurrency: 1, ...options });
  queues.push(q);
  return q;
}

function listening(q: PostgresMessageQueue, handler: (message: unknown) => Promise<void> | void) {
  const controller = new AbortController();
  const done = q.listen(handler, { signal: controller.signal });
  return {
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

async function rowsOf(name: string): Promise<number> {
  const { rows } = await admin.query("SELECT count(*)::int AS n FROM federation_messages WHERE queue = $1", [name]);
  return rows[0].n;
}

/**
 * Statements sent to PostgreSQL by every client but the test's own so far: pg's query counted as
 * it goes out (each statement of a pool is also a transaction of its own).
 */
let sent = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (this !== admin) sent++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;
const statements = async () => sent;

const DAY = { ttl: Temporal.Duration.from({ days: 1 }) };

/** Fedify's handling of a received activity as the store sees it: its record read, then written. */
function idempotentHandler(handled: string[], dropped: string[], fail?: () => boolean) {
  return async (message: unknown) => {
    const { id } = message as { id: string };
    const key = ["_fedify", "activityIdempotence", "http://local.test", id] as const;
    if ((await kv.get(key)) === true) {
      dropped.push(id);
      return;
    }
    handled.push(id);
    await kv.set(key, true, DAY);
    if (fail?.()) throw new Error("failed after its record was set");
  };
}

const carrying = (id: string) => ({ id, carriedReads: [idempotenceKey("http://local.test", id)] });

describe("the federation queue's own statements", () => {
  it("writes the done of a handled message with the claim of the next", async () => {
    const q = queue("paired");
    await q.enqueueMany(Array.from({ length: 60 }, (_, n) => ({ n })));
    const before = await statements();
    let handled = 0;
    const listener = listening(q, () => {
      handled++;
    });
    try {
      await expect.poll(() => rowsOf("paired"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
    expect(handled).toBe(60);
    // A claim and a done each were 120 and more; the test's own reads are a few.
    expect((await statements()) - before).toBeLessThan(80);
  });

  it("reads a received activity's idempotence record with its claim and writes it with its done; copies are handled once", async () => {
    const q = queue("carried");
    const ids = Array.from({ length: 20 }, (_, n) => `https://remote.test/activities/${n}`);
    // Each activity twice (sent again, or to two inboxes), one after the other by its key.
    for (const id of ids) await q.enqueueMany([carrying(id), carrying(id)], { orderingKey: `received ${id}` });
    const handled: string[] = [];
    const dropped: string[] = [];
    const before = await statements();
    const listener = listening(q, idempotentHandler(handled, dropped));
    try {
      await expect.poll(() => rowsOf("carried"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
    expect(handled.sort()).toEqual([...ids].sort());
    expect(dropped.sort()).toEqual([...ids].sort());
    // 40 messages: a claim (with the done before it) each. Read and written by the store's own
    // statements, they were 100 more.
    expect((await statements()) - before).toBeLessThan(60);
    const { rows } = await admin.query<{ n: number; expiring: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE expires_at > now() + interval '23 hours')::int AS expiring
       FROM federation_kv WHERE key LIKE '["_fedify","activityIdempotence","http://local.test",%'`,
    );
    expect(rows[0]).toEqual({ n: 20, expiring: 20 });
    // The store reads the records as it would have written them.
    expect(await kv.get(["_fedify", "activityIdempotence", "http://local.test", ids[0]])).toBe(true);
  });

  it("keeps the record of a handler that failed after setting it: its retry is dropped", async () => {
    const q = queue("failing");
    const id = "https://remote.test/activities/failing";
    await q.enqueue(carrying(id), { orderingKey: `received ${id}` });
    const handled: string[] = [];
    const dropped: string[] = [];
    let failures = 0;
    const listener = listening(
      q,
      idempotentHandler(handled, dropped, () => failures++ === 0),
    );
    try {
      await expect.poll(() => rowsOf("failing"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
    expect(handled).toEqual([id]);
    expect(dropped).toEqual([id]);
  });

  it("reads a record another process wrote before the claim", async () => {
    const q = queue("known");
    const id = "https://remote.test/activities/known";
    await admin.query(
      `INSERT INTO federation_kv (key, value, expires_at) VALUES ($1, 'true', now() + interval '1 day')`,
      [idempotenceKey("http://local.test", id)],
    );
    await q.enqueue(carrying(id), { orderingKey: `received ${id}` });
    const handled: string[] = [];
    const dropped: string[] = [];
    const listener = listening(q, idempotentHandler(handled, dropped));
    try {
      await expect.poll(() => rowsOf("known"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
    expect(handled).toEqual([]);
    expect(dropped).toEqual([id]);
  });
});
