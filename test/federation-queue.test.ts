// Fedify's message queue on PostgreSQL (src/federation/message-queue.ts): messages of one ordering
// key handled one at a time in order, delays kept, two listeners sharing a queue handling each
// message once, an aborted listen() returning, a failing or hung handler's message retried (and
// holding back the rest of its key meanwhile), a dead worker's claim taken over once it lapses,
// more handlers at once while the event loop has time to spare (spareConcurrency, spareFor).
import { Temporal } from "@js-temporal/polyfill";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresMessageQueue, type PostgresMessageQueueOptions } from "../src/federation/message-queue.ts";
import { freshDatabase } from "./support/server.ts";

const WAIT = { timeout: 10_000, interval: 25 };
const log = pino({ level: "silent" });

let databaseUrl: string;
let admin: pg.Client;
const queues: PostgresMessageQueue[] = [];

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await admin?.end();
});

/** A queue of its own name (tests do not see each other's messages), closed after the file. */
function queue(name: string, options: Partial<PostgresMessageQueueOptions> = {}): PostgresMessageQueue {
  const q = new PostgresMessageQueue({ databaseUrl, log, name, retryMs: 50, ...options });
  queues.push(q);
  return q;
}

type Handler = (message: unknown) => Promise<void> | void;

/** Listens with `handler` until the returned stop() is called; stop() waits for listen() to return. */
function listening(q: PostgresMessageQueue, handler: Handler): { stop(): Promise<void>; done: Promise<void> } {
  const controller = new AbortController();
  const done = q.listen(handler, { signal: controller.signal });
  return {
    done,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rowsOf(name: string): Promise<number> {
  const { rows } = await admin.query("SELECT count(*)::int AS n FROM federation_messages WHERE queue = $1", [name]);
  return rows[0].n;
}

/**
 * Message `n` of queue `name` locked by another connection's open transaction, as a statement in
 * flight holds it; `release` commits, and ends the connection.
 */
async function holdMessage(name: string, n: number): Promise<{ release(): Promise<void> }> {
  const holder = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query("SELECT id FROM federation_messages WHERE queue = $1 AND message->>'n' = $2 FOR UPDATE", [
    name,
    String(n),
  ]);
  let released: Promise<void> | undefined;
  return {
    release: () => {
      released ??= holder.query("COMMIT").then(() => holder.end());
      return released;
    },
  };
}

describe("the federation message queue", () => {
  it("writes enqueues made together in a few statements, each key's in order: a fan-out of 3,000 inboxes", async () => {
    const q = queue("fanout");
    const commits = async () => {
      const { rows } = await admin.query(
        "SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = current_database()",
      );
      return rows[0].n as number;
    };
    await admin.query("SELECT pg_stat_clear_snapshot()");
    const before = await commits();
    await Promise.all(
      Array.from({ length: 3_000 }, (_, i) => q.enqueue({ i }, { orderingKey: `sender\ninbox${i % 10}` })),
    );
    // PostgreSQL counts commits a moment after they happen (its statistics are flushed in turns).
    await admin.query("SELECT pg_stat_force_next_flush()");
    await admin.query("SELECT pg_stat_clear_snapshot()");
    // One statement per call was 3,000 commits; a few more than 3 are the test's own reads.
    expect((await commits()) - before).toBeLessThan(20);
    const { rows } = await admin.query<{ i: number; key: string }>(
      "SELECT (message->>'i')::int AS i, ordering_key AS key FROM federation_messages WHERE queue = 'fanout' ORDER BY id",
    );
    expect(rows.length).toBe(3_000);
    for (let key = 0; key < 10; key++) {
      const of = rows.filter((row) => row.key === `sender\ninbox${key}`).map((row) => row.i);
      expect(of).toEqual(Array.from({ length: 300 }, (_, n) => n * 10 + key));
    }
  });

  it("handles the messages of one ordering key one at a time, in order, across listeners", async () => {
    const a = queue("ordered", { concurrency: 4 });
    const b = queue("ordered", { concurrency: 4 });
    const seen = new Map<string, number[]>();
    const running = new Map<string, number>();
    let overlaps = 0;
    let unkeyed = 0;
    const handler: Handler = async (message) => {
      const { key, n } = message as { key?: string; n: number };
      if (!key) {
        unkeyed++;
        return;
      }
      running.set(key, (running.get(key) ?? 0) + 1);
      if ((running.get(key) ?? 0) > 1) overlaps++;
      await sleep(Math.random() * 10);
      seen.set(key, [...(seen.get(key) ?? []), n]);
      running.set(key, (running.get(key) ?? 0) - 1);
    };
    const one = listening(a, handler);
    const two = listening(b, handler);
    try {
      for (let n = 0; n < 15; n++) {
        for (const key of ["k1", "k2", "k3"]) await a.enqueue({ key, n }, { orderingKey: key });
      }
      await b.enqueueMany(
        Array.from({ length: 10 }, (_, n) => ({ n })),
        {},
      );
      await expect.poll(() => rowsOf("ordered"), WAIT).toBe(0);
      const order = Array.from({ length: 15 }, (_, n) => n);
      expect(Object.fromEntries(seen)).toEqual({ k1: order, k2: order, k3: order });
      expect(overlaps).toBe(0);
      expect(unkeyed).toBe(10);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it("a message of a key let go holds back the later ones, however early a claim under way began", async () => {
    // A claim's now() is when its statement arrived; it sees the rows committed by the time it was
    // parsed and planned (and run_at is rounded to the millisecond). Under load, another listener's
    // done let a message go in between: due later than that now(), it held back nothing, and the
    // later message of its key was claimed first (message 14 of a key out of place in the test
    // above). Here the other listener's claim is run in a transaction begun before the done: its
    // now() is as early, and it sees the done.
    const a = queue("let-go", { concurrency: 1 });
    const b = queue("let-go", { pollMs: 100 });
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const handled: number[] = [];
    const handler: Handler = async (message) => {
      const { n } = message as { n: number };
      handled.push(n);
      if (n === 0) await gate;
    };
    const { query } = pg.Pool.prototype as unknown as { query: (...args: unknown[]) => Promise<unknown> };
    let hold = false;
    let began = () => {};
    const beginning = new Promise<void>((resolve) => {
      began = resolve;
    });
    let go = () => {};
    const going = new Promise<void>((resolve) => {
      go = resolve;
    });
    (pg.Pool.prototype as unknown as { query: typeof query }).query = async function (this: pg.Pool, ...args) {
      // The first claim carrying no done: the second listener's, which has handled nothing.
      const text = String(args[0]);
      if (!hold || !text.includes("claimed AS (") || text.includes("handled AS (")) return query.apply(this, args);
      hold = false;
      const client = await this.connect();
      try {
        await client.query("BEGIN");
        began();
        await going;
        const result = await client.query(text, args[1] as unknown[]);
        await client.query("COMMIT");
        return result;
      } finally {
        client.release();
      }
    };
    const one = listening(a, handler);
    let two: ReturnType<typeof listening> | undefined;
    try {
      // 0 is claimed, 1 parked behind it; 2, queued meanwhile, is due and not parked.
      await a.enqueueMany([{ n: 0 }, { n: 1 }], { orderingKey: "k" });
      await expect.poll(() => handled, WAIT).toEqual([0]);
      await a.enqueue({ n: 2 }, { orderingKey: "k" });
      hold = true;
      two = listening(b, handler);
      await beginning;
      // Stopped, the first listener writes 0's done in a statement of its own, which lets 1 go.
      const stopping = one.stop();
      open();
      await stopping;
      go();
      await expect.poll(() => rowsOf("let-go"), WAIT).toBe(0);
      expect(handled).toEqual([0, 1, 2]);
    } finally {
      (pg.Pool.prototype as unknown as { query: typeof query }).query = query;
      open();
      go();
      await Promise.all([one.stop(), two?.stop()]);
    }
  });

  it("a message of a key made due again holds back the later ones, however early a claim under way began", async () => {
    // A claim's now() is when its statement arrived; it sees the rows committed by the time it was
    // parsed and planned. A message given back (or let go by a done) meanwhile is due later than
    // that now(), yet seen: judged by its run_at alone, it held back nothing, and the later message
    // of its key was claimed first (under load, message 14 of a key came out of place in the test
    // above). Here the other listener's claim is held at its parse by a lock on the key-value
    // table it reads, while the first listener gives its message back.
    const a = queue("given-back", { concurrency: 1 });
    const b = queue("given-back", { pollMs: 100 });
    await a.enqueue({ n: 0 });
    await a.enqueue({ n: 1 }, { orderingKey: "k" });
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // One claim takes both: 0 runs, 1 waits for the only handler.
    const one = listening(a, () => gate);
    const claimedBy = async () =>
      (
        await admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM federation_messages WHERE queue = 'given-back' AND claimed_by IS NOT NULL",
        )
      ).rows[0].n;
    await expect.poll(claimedBy, WAIT).toBe(2);
    // Queued behind 1 while it is claimed: due, and not parked.
    await a.enqueue({ n: 2 }, { orderingKey: "k" });
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE federation_kv IN ACCESS EXCLUSIVE MODE");
    const handled: number[] = [];
    let two: ReturnType<typeof listening> | undefined;
    let stopping: Promise<void> | undefined;
    try {
      two = listening(b, (message) => {
        handled.push((message as { n: number }).n);
      });
      await expect
        .poll(
          async () =>
            (
              await admin.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'federation_kv'::regclass",
              )
            ).rows[0].n,
          WAIT,
        )
        .toBe(1);
      // Stopped, the first listener gives back 1, claimed but not started.
      stopping = one.stop();
      await expect.poll(claimedBy, WAIT).toBe(1);
    } finally {
      await holder.query("COMMIT");
      await holder.end();
      open();
      await (stopping ?? one.stop());
    }
    try {
      await expect.poll(() => rowsOf("given-back"), WAIT).toBe(0);
      expect(handled).toEqual([1, 2]);
    } finally {
      await two?.stop();
    }
  });

  it("parks a key's line behind the message being handled: no claim passes over it, and it goes on in order", async () => {
    const q = queue("line", { concurrency: 2 });
    let release!: () => void;
    const first = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: number[] = [];
    const listener = listening(q, async (message) => {
      const { n } = message as { n: number };
      if (n === 0) await first;
      seen.push(n);
    });
    try {
      await q.enqueueMany(
        Array.from({ length: 500 }, (_, n) => ({ n })),
        { orderingKey: "sender\nhttp://dead.example" },
      );
      // While the first is handled, none of the 499 behind it is due: the claims of the other
      // worker (and of every other key) do not walk them.
      await expect
        .poll(async () => {
          const { rows } = await admin.query(
            `SELECT count(*) FILTER (WHERE parked)::int AS parked,
                    count(*) FILTER (WHERE run_at <= now())::int AS due
             FROM federation_messages WHERE queue = 'line'`,
          );
          return rows[0];
        }, WAIT)
        .toEqual({ parked: 499, due: 0 });
      release();
      await expect.poll(() => rowsOf("line"), WAIT).toBe(0);
      expect(seen).toEqual(Array.from({ length: 500 }, (_, n) => n));
    } finally {
      release();
      await listener.stop();
    }
  });

  it("keeps a message's delay", async () => {
    const q = queue("delayed");
    const handled: { n: number; at: number }[] = [];
    const listener = listening(q, (message) => {
      handled.push({ n: (message as { n: number }).n, at: Date.now() });
    });
    try {
      const start = Date.now();
      await q.enqueue({ n: 1 }, { delay: Temporal.Duration.from({ milliseconds: 800 }) });
      await q.enqueueMany([{ n: 2 }, { n: 3 }]);
      await expect.poll(() => handled.length, WAIT).toBe(3);
      // 2 and 3 have no ordering key: they may be handled side by side, in either order.
      expect(
        handled
          .slice(0, 2)
          .map((h) => h.n)
          .sort(),
      ).toEqual([2, 3]);
      expect(handled[2].n).toBe(1);
      expect(handled[2].at - start).toBeGreaterThanOrEqual(800);
      expect(await q.getDepth()).toEqual({ queued: 0, ready: 0, delayed: 0 });
    } finally {
      await listener.stop();
    }
  });

  it("a message that falls due between a claim and the look for what comes next is not left to the poll", async () => {
    const q = queue("falls-due", { pollMs: 60_000 });
    const handled: number[] = [];
    const listener = listening(q, (message) => {
      handled.push((message as { n: number }).n);
    });
    const { query } = pg.Pool.prototype as unknown as { query: (...args: unknown[]) => Promise<unknown> };
    let held = false;
    // The next look for the earliest due time is sent 400 ms late: the message falls due meanwhile.
    (pg.Pool.prototype as unknown as { query: typeof query }).query = async function (...args) {
      if (held && String(args[0]).includes("min(run_at) - now()")) {
        held = false;
        await sleep(400);
      }
      return query.apply(this, args);
    };
    try {
      await sleep(300);
      held = true;
      await q.enqueue({ n: 1 }, { delay: Temporal.Duration.from({ milliseconds: 150 }) });
      // Woken now (as by another enqueue): its claim finds the message not yet due, and the wake
      // its delay had set is spent.
      await admin.query("SELECT pg_notify('murmur_federation_queued', '0:falls-due')");
      await expect.poll(() => handled, { timeout: 3_000, interval: 25 }).toEqual([1]);
    } finally {
      (pg.Pool.prototype as unknown as { query: typeof query }).query = query;
      await listener.stop();
    }
  });

  it("two listeners of one queue handle each message once", async () => {
    const a = queue("shared", { concurrency: 2 });
    const b = queue("shared", { concurrency: 2 });
    const byA: number[] = [];
    const byB: number[] = [];
    const one = listening(a, async (m) => {
      byA.push((m as { n: number }).n);
      await sleep(5);
    });
    const two = listening(b, async (m) => {
      byB.push((m as { n: number }).n);
      await sleep(5);
    });
    try {
      await a.enqueueMany(Array.from({ length: 100 }, (_, n) => ({ n })));
      await expect.poll(() => byA.length + byB.length, WAIT).toBe(100);
      await sleep(200);
      expect([...byA, ...byB].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, n) => n));
      expect(byA.length).toBeGreaterThan(0);
      expect(byB.length).toBeGreaterThan(0);
      await expect.poll(() => rowsOf("shared"), WAIT).toBe(0);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it("an aborted listen() returns, and what is queued after waits for another listener", async () => {
    const q = queue("aborted");
    let handled = 0;
    const listener = listening(q, () => {
      handled++;
    });
    await q.enqueue({ n: 1 });
    await expect.poll(() => handled, WAIT).toBe(1);
    await listener.stop();
    await q.enqueue({ n: 2 });
    await sleep(300);
    expect(handled).toBe(1);
    expect(await q.getDepth()).toEqual({ queued: 1, ready: 1, delayed: 0 });
    // An aborted signal from the start: listen() returns at once.
    const aborted = new AbortController();
    aborted.abort();
    await q.listen(() => {}, { signal: aborted.signal });
    const again = listening(q, () => {
      handled++;
    });
    try {
      await expect.poll(() => handled, WAIT).toBe(2);
    } finally {
      await again.stop();
    }
  });

  it("a message whose handler throws is retried, and holds back the later messages of its key", async () => {
    const q = queue("failing");
    const attempts = new Map<number, number>();
    const handled: number[] = [];
    const listener = listening(q, (message) => {
      const { n } = message as { n: number };
      attempts.set(n, (attempts.get(n) ?? 0) + 1);
      if (n === 1 && (attempts.get(n) ?? 0) < 3) throw new Error("not yet");
      handled.push(n);
    });
    try {
      await q.enqueue({ n: 1 }, { orderingKey: "k" });
      await q.enqueue({ n: 2 }, { orderingKey: "k" });
      await q.enqueue({ n: 3 });
      await expect.poll(() => handled.length, WAIT).toBe(3);
      expect(attempts.get(1)).toBe(3);
      expect(handled.indexOf(1)).toBeLessThan(handled.indexOf(2));
      // The last message's done is written once its handler has returned (by the worker's next claim).
      await expect.poll(() => rowsOf("failing"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
  });

  it("a handler that hangs times out: the queue goes on, and the message is tried again", async () => {
    const q = queue("hung", { concurrency: 1, handlerTimeoutMs: 300 });
    const handled: string[] = [];
    let hung = false;
    const listener = listening(q, async (message) => {
      const { name } = message as { name: string };
      if (name === "hangs" && !hung) {
        hung = true;
        await new Promise(() => {});
      }
      handled.push(name);
    });
    try {
      await q.enqueue({ name: "hangs" });
      await q.enqueue({ name: "next" });
      await expect.poll(() => handled.length, WAIT).toBe(2);
      expect(handled.sort()).toEqual(["hangs", "next"]);
    } finally {
      await listener.stop();
    }
  });

  it("a message claimed by a worker that died is handled once the claim lapses", async () => {
    const q = queue("orphaned");
    await q.enqueue({ n: 1 }, { orderingKey: "k" });
    await q.enqueue({ n: 2 }, { orderingKey: "k" });
    // What a worker leaves as it dies holding the first: its claim, renewed no more.
    await admin.query(
      `UPDATE federation_messages SET claimed_by = 'dead', attempts = 1, run_at = now() + interval '700 milliseconds'
       WHERE id = (SELECT min(id) FROM federation_messages WHERE queue = 'orphaned')`,
    );
    const handled: number[] = [];
    const listener = listening(q, (message) => {
      handled.push((message as { n: number }).n);
    });
    try {
      await sleep(300);
      // Held by the dead worker: neither it nor the later one of its key is handled yet.
      expect(handled).toEqual([]);
      await expect.poll(() => handled, WAIT).toEqual([1, 2]);
      // Deleted once its handler has returned.
      await expect.poll(() => rowsOf("orphaned"), WAIT).toBe(0);
    } finally {
      await listener.stop();
    }
  });

  it("a long handler keeps its claim: no other listener takes the message meanwhile", async () => {
    // Polling often: the other listener looks again well within the handler's second.
    const a = queue("leased", { leaseMs: 300, pollMs: 100, concurrency: 1 });
    const b = queue("leased", { leaseMs: 300, pollMs: 100, concurrency: 1 });
    let calls = 0;
    const handler: Handler = async () => {
      calls++;
      await sleep(1_000);
    };
    const one = listening(a, handler);
    const two = listening(b, handler);
    try {
      await a.enqueue({ n: 1 });
      await expect.poll(() => rowsOf("leased"), WAIT).toBe(0);
      expect(calls).toBe(1);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });
  it("a paused server's postpone does not wait on a message another statement holds", async () => {
    const q = queue("postponed-held");
    for (const n of [1, 2, 3])
      await q.enqueue({ n, inbox: "https://dead.test/inbox" }, { delay: Temporal.Duration.from({ seconds: 1 }) });
    // Another connection holds the second, as a claim taking it or a renewal of its line does.
    const holder = await holdMessage("postponed-held", 2);
    try {
      // Waiting on that lock, it had deadlocked with a claim writing its done.
      const moved = await Promise.race([
        q.postpone("inbox", "https://dead.test/", 60_000),
        sleep(3_000).then(() => "waited"),
      ]);
      expect(moved).toBe(2);
      await holder.release();
      const { rows } = await admin.query<{ n: string; later: boolean }>(
        `SELECT message->>'n' AS n, run_at > now() + interval '30 seconds' AS later
         FROM federation_messages WHERE queue = $1 ORDER BY id`,
        ["postponed-held"],
      );
      expect(rows).toEqual([
        { n: "1", later: true },
        { n: "2", later: false },
        { n: "3", later: true },
      ]);
    } finally {
      await holder.release();
    }
  });

  it("a claim does not wait on a later message another statement holds (a paused server's postpone)", async () => {
    const q = queue("held-successor");
    await q.enqueue({ n: 1 }, { orderingKey: "k" });
    await q.enqueue({ n: 2 }, { orderingKey: "k" });
    // Another connection holds the second message's row, as a postpone moving it does.
    const holder = await holdMessage("held-successor", 2);
    const handled: unknown[] = [];
    const listener = listening(q, (message) => {
      handled.push(message);
    });
    try {
      // Parking the line behind the first had waited on that lock (and deadlocked with postpones).
      await expect.poll(() => handled.length, WAIT).toBeGreaterThanOrEqual(1);
      expect(handled[0]).toEqual({ n: 1 });
      await holder.release();
      await expect.poll(() => handled, WAIT).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      await holder.release();
      await listener.stop();
    }
  });

  it("runs spareConcurrency handlers at once while the event loop has time to spare, concurrency while it is busy", async () => {
    /** The most handlers running at once over `messages` handled, each waiting 100 ms as on a statement. */
    const most = async (name: string, messages: number, options: Partial<PostgresMessageQueueOptions> = {}) => {
      const q = queue(name, { concurrency: 2, spareConcurrency: 6, ...options });
      let running = 0;
      let highest = 0;
      let handled = 0;
      const listener = listening(q, async () => {
        highest = Math.max(highest, ++running);
        await sleep(100);
        running--;
        handled++;
      });
      try {
        await q.enqueueMany(Array.from({ length: messages }, (_, n) => ({ n })));
        await expect.poll(() => handled, WAIT).toBe(messages);
      } finally {
        await listener.stop();
      }
      return highest;
    };
    expect(await most("spare-idle", 40)).toBe(6);
    // Only what spareFor chooses runs on the spare handlers.
    expect(await most("spare-none", 20, { spareFor: () => false })).toBe(2);
    // The event loop busy 45 ms of every 50, as requests keep it: no more than `concurrency`.
    const busy = setInterval(() => {
      const until = performance.now() + 45;
      while (performance.now() < until);
    }, 50);
    try {
      await sleep(200);
      expect(await most("spare-busy", 20)).toBe(2);
    } finally {
      clearInterval(busy);
    }
  });
});
