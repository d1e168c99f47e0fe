// Fedify's message queue in Murmur's PostgreSQL, table federation_messages
// (prisma/migrations/20261127160000_federation_queue): durable, shared by every process of a fleet
// that listens to it, at least once.
//
// A listener claims due messages with FOR UPDATE SKIP LOCKED, several at once, by setting their
// run_at to the end of a lease it renews until each is done; a message is deleted once handled.
// A worker that dies leaves its messages to be claimed again when their leases lapse; a handler
// that throws or outlasts its timeout (a hung request must not stop the queue:
// fedify-dev/fedify#595) has its message tried again after a backoff. No connection is held while
// a handler runs, so the pool stays small whatever the concurrency (a connection reserved per
// handler starved Fedify's own PostgreSQL queue: fedify-dev/fedify#603). A message with an
// ordering key waits while an earlier one of its key is due, being handled, waiting for a retry,
// or parked: one at a time, in order of enqueueing (an earlier one still waiting for its own delay
// does not hold it back). Those waiting are parked meanwhile (claim()), so that a claim costs the
// same however long a key's line is.
//
// It runs its handlers concurrently itself (`concurrency`): wrapped in Fedify's
// ParallelMessageQueue, whose handler returns before the message is handled, a message would be
// deleted before it is handled and its ordering key no longer kept.
//
// A listener's claim writes the done of the messages it handled since its last claim, and reads
// the key-value entries the messages it claims name (a received activity's idempotence record),
// which their done writes: one statement for several messages under load (work(), claim()).
//
// Workers wake on NOTIFY (an enqueue; a keyed message done), at the earliest future run_at they
// know of (delays, retries, leases), and every poll interval (a missed notification).
//
// An enqueue made inside enqueueIn(client, ...) runs on that client, in its transaction: the
// outbox relay (src/federation/outbox.ts) deletes the row it relays in the transaction that
// queues it.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { isMainThread, threadId } from "node:worker_threads";
import type {
  MessageQueue,
  MessageQueueDepth,
  MessageQueueEnqueueOptions,
  MessageQueueListenOptions,
} from "@fedify/fedify";
import type pg from "pg";
import type { Logger } from "pino";
import { Listener } from "../db/listener.ts";
import { newPool } from "../db/pool.ts";
import { RepeatedFailure } from "../log.ts";
import { type CarriedEntries, carryingEntries, writtenSql } from "./kv-store.ts";

const CHANNEL = "murmur_federation_queued";

interface Joined {
  client: pg.ClientBase;
  /** False once enqueueIn returned: an enqueue still coming must not run outside the transaction. */
  open: boolean;
}

const joined = new AsyncLocalStorage<Joined>();

/**
 * Runs `run` with every enqueue of this module's queues made on `client` (in the transaction it
 * has open), rather than on the queue's own pool: what `run` queues commits or rolls back with
 * whatever else that transaction does.
 */
export async function enqueueIn<T>(client: pg.ClientBase, run: () => Promise<T>): Promise<T> {
  const scope: Joined = { client, open: true };
  try {
    return await joined.run(scope, run);
  } finally {
    scope.open = false;
  }
}

export interface PostgresMessageQueueOptions {
  databaseUrl: string;
  log: Logger;
  /** The queue's name in the table (default "default"): Fedify's inbox and outbox may each have one. */
  name?: string;
  /** Messages handled at once by one listen() (default 4). */
  concurrency?: number;
  /**
   * Messages handled at once while the thread's event loop has time to spare (busy less than 80%
   * of its last 100 ms; default, and at least, `concurrency`): a handler mostly waits for its
   * statements.
   */
  spareConcurrency?: number;
  /** Which messages may run on the spare handlers (default: all). */
  spareFor?: (message: unknown) => boolean;
  /** Connections of the queue's own pool (default 2): no statement of it waits on a handler. */
  poolSize?: number;
  /** A handler running longer fails (default 60 s). */
  handlerTimeoutMs?: number;
  /** How long a claim lasts unrenewed (default 30 s): a dead worker's message waits that long. */
  leaseMs?: number;
  /** Polling interval, for notifications missed (default 5 s). */
  pollMs?: number;
  /** Wait before retrying a message whose handler failed, doubling each time (default 1 s)... */
  retryMs?: number;
  /** ...up to this (default an hour). */
  maxRetryMs?: number;
  /** Attempts after which a failing message is dropped with an error line (default 10). */
  maxAttempts?: number;
}

/** The event loop's utilization under which it has time to spare (spareConcurrency). */
const SPARE_BELOW = 0.8;
/** The window the event loop's utilization is measured over. */
const LOAD_WINDOW_MS = 100;

/**
 * This thread's event-loop utilization (0-1) over the last LOAD_WINDOW_MS, sampled while a
 * listener works (use()); busy (1) until a first window has passed.
 */
const loopLoad = {
  value: 1,
  users: 0,
  timer: undefined as NodeJS.Timeout | undefined,
  /** Samples while the caller works; the function returned ends its use. */
  use(): () => void {
    if (this.users++ === 0) {
      let last = performance.eventLoopUtilization();
      this.timer = setInterval(() => {
        const now = performance.eventLoopUtilization();
        this.value = performance.eventLoopUtilization(now, last).utilization;
        last = now;
      }, LOAD_WINDOW_MS).unref();
    }
    return () => {
      if (--this.users > 0) return;
      clearInterval(this.timer);
      this.value = 1;
    };
  },
};

/** Enqueues written by one statement at most. */
const ENQUEUE_BATCH = 1_000;

interface PendingEnqueue {
  message: unknown;
  orderingKey: string | null;
  delayMs: number;
  resolve(): void;
  reject(err: unknown): void;
}

interface Claimed {
  id: string;
  message: unknown;
  ordering_key: string | null;
  attempts: number;
  /** Whether messages of its key are parked behind it: its done lets the first of them go. */
  behind: boolean;
  claim: string;
  /** What its handler reads and writes of the key-value store, carried by the claim and the done. */
  carried: CarriedEntries;
  /** Renews its lease from its claim until its done is written (or it is given back). */
  renewal?: NodeJS.Timeout;
}

export class PostgresMessageQueue implements MessageQueue {
  /**
   * Fedify retries failed deliveries itself (re-enqueued with a delay); this queue's own retries
   * are for handlers that throw.
   */
  readonly nativeRetrial = false;

  private readonly pool: pg.Pool;
  private readonly log: Logger;
  private readonly name: string;
  /** Who claims, in claimed_by: the process, and the thread when not its main one (FEDERATION_QUEUE=thread). */
  private readonly worker = `${os.hostname()}:${process.pid}${isMainThread ? "" : `:thread${threadId}`}`;
  private readonly failures: RepeatedFailure;
  /** Enqueues not written yet, and the write that will take them (flush). */
  private pending: PendingEnqueue[] = [];
  private flushing?: Promise<void>;
  private readonly settings: Required<Omit<PostgresMessageQueueOptions, "databaseUrl" | "log" | "name" | "poolSize">>;

  constructor(private readonly options: PostgresMessageQueueOptions) {
    this.log = options.log;
    this.name = options.name ?? "default";
    const concurrency = options.concurrency ?? 4;
    this.settings = {
      concurrency,
      spareConcurrency: Math.max(options.spareConcurrency ?? 0, concurrency),
      spareFor: options.spareFor ?? (() => true),
      handlerTimeoutMs: options.handlerTimeoutMs ?? 60_000,
      leaseMs: options.leaseMs ?? 30_000,
      pollMs: options.pollMs ?? 5_000,
      retryMs: options.retryMs ?? 1_000,
      maxRetryMs: options.maxRetryMs ?? 3_600_000,
      maxAttempts: options.maxAttempts ?? 10,
    };
    this.pool = newPool({ connectionString: options.databaseUrl, max: options.poolSize ?? 2 });
    this.failures = new RepeatedFailure(this.log, `federation queue ${this.name} not worked`);
  }

  enqueue(message: unknown, options?: MessageQueueEnqueueOptions): Promise<void> {
    if (joined.getStore()) return this.enqueueMany([message], options);
    const delayMs = Math.max(0, options?.delay ? options.delay.total("millisecond") : 0);
    return new Promise((resolve, reject) => {
      this.pending.push({ message, orderingKey: options?.orderingKey ?? null, delayMs, resolve, reject });
      this.flushing ??= new Promise<void>((done) => setImmediate(done)).then(() => this.flush());
    });
  }

  /**
   * Writes the enqueues made meanwhile, ENQUEUE_BATCH at a time, one statement after another (so in
   * the order they were made). Fedify enqueues a fan-out's deliveries one call each, all at once:
   * 10,000 inboxes were 10,000 statements on the queue's two connections, long enough to outlast the
   * fan-out message's handler timeout (which queued them all again) and to time out waiting for a
   * connection.
   */
  private async flush(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.splice(0, ENQUEUE_BATCH);
      const soonest = Math.min(...batch.map((entry) => entry.delayMs));
      try {
        await this.pool.query(
          `WITH queued AS (
             INSERT INTO federation_messages (queue, message, ordering_key, run_at)
             SELECT $1, m.message, m.ordering_key, now() + make_interval(secs => m.delay)
             FROM unnest($2::jsonb[], $3::text[], $4::float8[]) WITH ORDINALITY AS m (message, ordering_key, delay, n)
             ORDER BY m.n
             RETURNING id)
           SELECT pg_notify('${CHANNEL}', $5) WHERE EXISTS (SELECT 1 FROM queued)`,
          [
            this.name,
            batch.map((entry) => JSON.stringify(entry.message) ?? "null"),
            batch.map((entry) => entry.orderingKey),
            batch.map((entry) => entry.delayMs / 1000),
            `${soonest}:${this.name}`,
          ],
        );
        for (const entry of batch) entry.resolve();
      } catch (err) {
        for (const entry of batch) entry.reject(err);
      }
    }
    this.flushing = undefined;
  }

  /** Enqueues `messages` in one statement, in their order (that of an ordering key's too). */
  async enqueueMany(messages: readonly unknown[], options?: MessageQueueEnqueueOptions): Promise<void> {
    if (messages.length === 0) return;
    const delayMs = Math.max(0, options?.delay ? options.delay.total("millisecond") : 0);
    const scope = joined.getStore();
    if (scope && !scope.open)
      throw new Error("federation queue: an enqueue came after the transaction it joined ended");
    await (scope?.client ?? this.pool).query(
      `WITH queued AS (
         INSERT INTO federation_messages (queue, message, ordering_key, run_at)
         SELECT $1, m.message, $3, now() + make_interval(secs => $4)
         FROM unnest($2::jsonb[]) WITH ORDINALITY AS m (message, n) ORDER BY m.n
         RETURNING id)
       SELECT pg_notify('${CHANNEL}', $5) WHERE EXISTS (SELECT 1 FROM queued)`,
      [
        this.name,
        messages.map((m) => JSON.stringify(m) ?? "null"),
        options?.orderingKey ?? null,
        delayMs / 1000,
        `${delayMs}:${this.name}`,
      ],
    );
  }

  /**
   * Moves the messages waiting (parked ones too) whose `field`, a string, starts with `prefix` to
   * `delayMs` from now, unless they are due later anyway: those of one paused server at once,
   * rather than each claimed and put back in turn (src/federation/delivery.ts). A key's messages
   * are all of one server (Fedify's key names the inbox's origin), so they move together, in order.
   *
   * It never waits on a row's lock: one another statement holds (a claim taking it, a renewal of
   * its key's line) is left as it is, and is held again when it is handled. Waiting, a postpone had
   * deadlocked with a claim writing its done: an update that finds a row changed since its snapshot
   * locks it to look again, and keeps that lock, so a postpone scanning 10,000 deliveries came to
   * hold messages a claim had just taken, and to wait on the next claim that was deleting them.
   */
  async postpone(field: string, prefix: string, delayMs: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE federation_messages SET parked = false, run_at = now() + make_interval(secs => $4)
       WHERE id IN (
         SELECT id FROM federation_messages
         WHERE queue = $1 AND claimed_by IS NULL AND (parked OR run_at < now() + make_interval(secs => $4))
           AND starts_with(message->>$2, $3)
         FOR UPDATE SKIP LOCKED)`,
      [this.name, field, prefix, delayMs / 1000],
    );
    return rowCount ?? 0;
  }

  /** The messages waiting (not held by a worker), of which `ready` are due now. */
  async getDepth(): Promise<MessageQueueDepth> {
    const { rows } = await this.pool.query<{ queued: number; ready: number }>(
      `SELECT count(*) FILTER (WHERE claimed_by IS NULL OR run_at <= now())::int AS queued,
              count(*) FILTER (WHERE run_at <= now())::int AS ready
       FROM federation_messages WHERE queue = $1`,
      [this.name],
    );
    const { queued, ready } = rows[0];
    return { queued, ready, delayed: queued - ready };
  }

  /**
   * Handles messages with `handler` (up to `concurrency` at once) until `signal` is aborted; then
   * stops claiming, lets the handlers running finish (each within its timeout) and returns.
   * Never rejects.
   */
  async listen(
    handler: (message: unknown) => Promise<void> | void,
    options: MessageQueueListenOptions = {},
  ): Promise<void> {
    const { signal } = options;
    if (signal?.aborted) return;
    const wakeup = new Wakeup(this.settings.pollMs);
    const listener = new Listener(
      this.options.databaseUrl,
      [CHANNEL],
      {
        notification: (_channel, payload) => {
          const colon = payload.indexOf(":");
          if (payload.slice(colon + 1) === this.name) wakeup.in(Number(payload.slice(0, colon)) || 0);
        },
        listening: () => wakeup.in(0),
      },
      this.log,
    );
    listener.listen();
    const stop = () => wakeup.in(0);
    signal?.addEventListener("abort", stop, { once: true });
    try {
      await this.work(handler, wakeup, signal);
    } finally {
      signal?.removeEventListener("abort", stop);
      wakeup.close();
      await listener.close();
    }
  }

  /** Ends the queue's pool, once no listen() runs. */
  async close(): Promise<void> {
    await this.pool.end();
  }

  /**
   * Runs up to `concurrency` handlers (`spareConcurrency` while the event loop has time to spare:
   * taking in activities, 4 handlers left the loop ~40% idle once the POSTs had been answered,
   * waiting on their statements; bench/README.md, "Intake, 2026-11-28: more handlers while the
   * loop is idle"). Messages are claimed several at once, up to as many more than are running,
   * when none claimed before is left waiting for a handler: one claim statement for about
   * `concurrency` messages under load rather than one each. PostgreSQL plans the claim for its
   * values each time (below), and that planning was a fifth of its CPU per received activity
   * (bench/README.md, "Intake, 2026-11-27 (fifth)"). The dones of the messages handled meanwhile
   * are written by the same statement.
   */
  private async work(
    handler: (message: unknown) => Promise<void> | void,
    wakeup: Wakeup,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { concurrency, spareConcurrency, spareFor } = this.settings;
    /** Claimed, waiting for a handler. */
    const waiting: Claimed[] = [];
    /** Handled, their done not written yet: written by the next claim's statement. */
    let finished: Claimed[] = [];
    const running = new Set<Promise<void>>();
    /** Wakes the loop below when a handler ends. */
    let ended: (() => void) | undefined;
    const start = (claimed: Claimed) => {
      const run = this.handle(claimed, handler).then((succeeded) => {
        running.delete(run);
        if (succeeded) finished.push(claimed);
        // The next in line, when it may run now (else when a later handler ends).
        if (!signal?.aborted && waiting.length > 0 && mayRun(waiting[0])) start(waiting.shift() as Claimed);
        ended?.();
      });
      running.add(run);
    };
    const spare = () => spareConcurrency > concurrency && loopLoad.value < SPARE_BELOW;
    /** Whether `claimed` may start now: past `concurrency` running, only what may use the spare handlers. */
    const mayRun = (claimed: Claimed) =>
      running.size < concurrency || (running.size < spareConcurrency && spare() && spareFor(claimed.message));
    /**
     * Whether the last claim held messages that may use the spare handlers: only then does the
     * next claim take as many, so that one of deliveries alone holds no more than it runs soon.
     */
    let sparing = false;
    const handlerEnds = () =>
      new Promise<void>((resolve) => {
        ended = resolve;
      });
    const aborted = new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve(), { once: true }));
    const endUse = spareConcurrency > concurrency ? loopLoad.use() : () => {};
    try {
      while (!signal?.aborted) {
        const limit = sparing && spare() ? spareConcurrency : concurrency;
        if (waiting.length > 0 || running.size >= limit) {
          // Stopped meanwhile: what waits is given back at once, not after a handler ends.
          await Promise.race([handlerEnds(), aborted]);
          continue;
        }
        const seen = wakeup.generation;
        const writing = finished;
        finished = [];
        let claimed: Claimed[] = [];
        let failed = false;
        try {
          claimed = await this.claim(writing, 2 * limit - running.size);
          this.failures.succeeded();
        } catch (err) {
          // Dones not written: their leases lapse and they are handled again (at least once).
          failed = true;
          this.failures.failed(err);
        }
        // Written, or else left to lapse: handled again (at least once) rather than tried forever.
        for (const written of writing) clearInterval(written.renewal);
        if (signal?.aborted) {
          await Promise.all(claimed.map((c) => this.release(c).catch(() => {})));
          break;
        }
        if (claimed.length > 0) sparing = claimed.some((one) => spareFor(one.message));
        for (const one of claimed) {
          if (waiting.length === 0 && mayRun(one)) start(one);
          else waiting.push(one);
        }
        if (claimed.length > 0) continue;
        if (!failed) {
          const next = await this.nextDueInMs().catch(() => undefined);
          if (next !== undefined) wakeup.in(next);
        }
        // A handler ended meanwhile: its done is written now.
        if (finished.length > 0) continue;
        // Nothing to claim: until something is queued, or a handler ends (its done to write).
        if (running.size > 0) await Promise.race([wakeup.wait(seen, signal), handlerEnds()]);
        else await wakeup.wait(seen, signal);
      }
    } finally {
      endUse();
    }
    await Promise.all(waiting.splice(0).map((c) => this.release(c).catch(() => {})));
    await Promise.all(running);
    if (finished.length > 0) await this.done(finished).catch((err) => this.failures.failed(err));
  }

  /** Renews `claimed`'s lease, and what it parked waits as long, until its done or its release. */
  private renewing(claimed: Claimed): void {
    const { leaseMs } = this.settings;
    claimed.renewal = setInterval(() => {
      this.pool
        .query(
          `WITH renewed AS (
             UPDATE federation_messages SET run_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND claimed_by = $2 RETURNING ordering_key, run_at)
           UPDATE federation_messages p SET run_at = renewed.run_at
           FROM renewed
           WHERE p.queue = $4 AND p.ordering_key = renewed.ordering_key AND p.parked`,
          [claimed.id, claimed.claim, leaseMs / 1000, this.name],
        )
        .catch(() => {});
    }, leaseMs / 3);
    claimed.renewal.unref();
  }

  /**
   * Claims up to `limit` due messages that no earlier one of their ordering key holds back (so at
   * most one of a key), and parks the due messages of each one's key behind it: out of the claims'
   * way until it is done (then the first of them is let go: done()), or else until its lease lapses.
   * Unparked, the 500 deliveries of one note to a server without a shared inbox were each looked at
   * and passed over by every claim while the first was handled: 76 ms a claim with 10,000 queued
   * for a dead server (bench/README.md).
   *
   * The same statement writes the done of the messages this listener handled since its last claim
   * (`finished`), and reads the key-value entries each claimed message names (`carriedReads`: its
   * idempotence record, src/federation/inbox.ts): one statement for several received activities
   * rather than three each (bench/README.md, "Federation at scale"). It sees the queue as it was
   * before those dones: a message they let go is claimed by the next claim, not by this one.
   *
   * Whether an earlier message holds one back is not judged by its run_at alone: the statement's
   * now() is when it arrived, but it sees what was committed by the time it was parsed and planned,
   * and run_at is rounded to the millisecond. A message another listener let go or gave back
   * meanwhile (run_at = that statement's now()) looked due later, held back nothing, and the next
   * of its key was claimed before it, then handled beside it. Such a message stays parked until it
   * is claimed, and parked holds back the rest of its key whatever the clock.
   */
  private async claim(finished: Claimed[], limit: number): Promise<Claimed[]> {
    const claim = `${this.worker}:${randomUUID()}`;
    const done = finished.length > 0 ? this.doneStatement(finished, 5) : undefined;
    // Unnamed, so planned for its values each time: named, PostgreSQL kept a generic plan made
    // while the table was empty (sequential scans), which with 10,000 deliveries held for a dead
    // server kept 1.8 of the 2 cores busy (bench/README.md, "Intake, 2026-11-27 (third)" and
    // "(fifth)"; test/federation-queue-planned.test.ts).
    const { rows } = await this.pool.query<
      Omit<Claimed, "claim" | "carried" | "behind"> & { known: Record<string, unknown> | null; behind: boolean }
    >(
      `WITH ${done ? `${done.ctes},` : ""}
       claimed AS (
         UPDATE federation_messages
         SET claimed_by = $2, attempts = attempts + 1, parked = false,
             run_at = now() + make_interval(secs => $3)
         WHERE id IN (
           SELECT m.id FROM federation_messages m
           WHERE m.queue = $1 AND m.run_at <= now()
             AND (m.ordering_key IS NULL OR NOT EXISTS (
               SELECT 1 FROM federation_messages e
               WHERE e.queue = m.queue AND e.ordering_key = m.ordering_key AND e.id < m.id
                 AND (e.attempts > 0 OR e.parked OR e.run_at <= now())))
           ORDER BY m.run_at, m.id
           LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING id, message, ordering_key, attempts, run_at),
       -- The claim never waits on a row's lock: a successor another statement holds (a paused
       -- server's postpone, which moves it anyway) is left unparked; the claim's own order check
       -- still keeps it behind. Waiting here had deadlocked claims against postpones. One
       -- statement, not a CTE of the successors joined to the update: PostgreSQL planned that
       -- longer than the rest of the claim (bench/README.md, "Intake, 2026-11-27 (fourth)").
       parked AS (
         UPDATE federation_messages p SET parked = true, run_at = c.run_at
         FROM claimed c
         WHERE p.id IN (
           SELECT q.id FROM federation_messages q
           WHERE q.queue = $1 AND q.ordering_key = c.ordering_key AND q.run_at <= now() AND q.id > c.id
           FOR UPDATE SKIP LOCKED)
         RETURNING p.ordering_key)
       -- The keys as an array the primary key is probed with: as a semi-join with the keys' set
       -- (k.key IN (SELECT ...)), PostgreSQL read the whole table at every claim, every
       -- idempotence record of the last day (bench/README.md, "Intake, 2026-11-27 (fourth)").
       -- \`behind\`: parked by this claim, or before it (let go by a done, the rest of its line
       -- still parked); the done of one with none behind it leaves out the let-go. A message let go
       -- is itself still parked in this statement's view: only those after it count.
       SELECT id, message, ordering_key, attempts,
              (SELECT jsonb_object_agg(k.key, k.value) FROM federation_kv k
               WHERE k.key = ANY (ARRAY(
                   SELECT jsonb_array_elements_text(claimed.message->'carriedReads')
                   WHERE jsonb_typeof(claimed.message->'carriedReads') = 'array'))
                 AND (k.expires_at IS NULL OR k.expires_at > now())) AS known,
              ordering_key IS NOT NULL AND (
                EXISTS (SELECT FROM parked WHERE parked.ordering_key = claimed.ordering_key)
                OR EXISTS (SELECT FROM federation_messages b
                           WHERE b.queue = $1 AND b.ordering_key = claimed.ordering_key AND b.parked
                             AND b.id > claimed.id)) AS behind
       FROM claimed`,
      [this.name, claim, this.settings.leaseMs / 1000, limit, ...(done?.values ?? [])],
    );
    // In the order they were queued (RETURNING keeps none).
    rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    return rows.map((row) => {
      const read = new Map<string, unknown>();
      const names = (row.message as { carriedReads?: unknown } | null)?.carriedReads;
      if (Array.isArray(names))
        for (const key of names) if (typeof key === "string") read.set(key, row.known?.[key] ?? undefined);
      const claimed: Claimed = {
        id: row.id,
        message: row.message,
        ordering_key: row.ordering_key,
        attempts: row.attempts,
        behind: row.behind,
        claim,
        carried: { open: true, read, written: new Map() },
      };
      this.renewing(claimed);
      return claimed;
    });
  }

  /**
   * Milliseconds until the earliest future run_at of the queue (a delay's or a retry's end, a
   * lease's): undefined when none comes before the next poll anyway.
   */
  private async nextDueInMs(): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ ms: number | null }>(
      `SELECT (extract(epoch FROM min(run_at) - now()) * 1000)::float8 AS ms
       FROM federation_messages WHERE queue = $1 AND run_at > now()`,
      [this.name],
    );
    const ms = rows[0]?.ms;
    return ms == null || ms >= this.settings.pollMs ? undefined : ms;
  }

  /** Runs the message's handler; true when it succeeded and its done is still to be written. */
  private async handle(claimed: Claimed, handler: (message: unknown) => Promise<void> | void): Promise<boolean> {
    const { handlerTimeoutMs } = this.settings;
    let failure: unknown;
    try {
      await withTimeout(() => carryingEntries(claimed.carried, () => handler(claimed.message)), handlerTimeoutMs);
    } catch (err) {
      failure = err;
    } finally {
      // A handler still running (timed out) writes the store itself from now on.
      claimed.carried.open = false;
    }
    if (failure === undefined) return true;
    try {
      await this.failed(claimed, failure);
    } catch (err) {
      // Its lease lapses and it is handled again: at least once.
      this.failures.failed(err);
    } finally {
      clearInterval(claimed.renewal);
    }
    return false;
  }

  /**
   * The done of handled messages, as common table expressions whose parameters are numbered from
   * `from`: they are deleted and the idempotence records their handlers set are written (with them,
   * or not at all); for each with messages of its key parked behind it, the first of them is let go
   * (due now, and still parked, so that it holds back the rest of its key until claimed: claim()),
   * and announced. A message with nothing parked behind it (a received activity, keyed by its id,
   * all but always) has no let-go: the statement is planned without it, and no instance's workers
   * are woken for nothing.
   */
  private doneStatement(finished: Claimed[], from: number): { ctes: string; values: unknown[] } {
    const values: unknown[] = [];
    const param = (value: unknown) => `$${from + values.push(value) - 1}`;
    // Claims are this listener's own: a message is deleted only if one of them still holds it.
    let ctes = `handled AS (
         DELETE FROM federation_messages
         WHERE id = ANY (${param(finished.map((c) => c.id))}::bigint[])
           AND claimed_by = ANY (${param(finished.map((c) => c.claim))}::text[])
         RETURNING id)`;
    // Each record once (a later handler's value kept): one INSERT may write a key only once.
    const written = new Map(finished.flatMap((claimed) => [...claimed.carried.written]));
    const recorded = writtenSql(written, from + values.length);
    values.push(...recorded.values);
    ctes += `,
       recorded AS (${recorded.text})`;
    const behind = finished.filter((c) => c.behind);
    if (behind.length > 0) {
      ctes += `,
       next AS (
         UPDATE federation_messages SET run_at = now()
         WHERE id IN (
           SELECT n.id FROM federation_messages n
           WHERE n.id IN (
             SELECT (SELECT p.id FROM federation_messages p
                     WHERE p.queue = ${param(this.name)} AND p.ordering_key = h.ordering_key AND p.parked
                     ORDER BY p.queue, p.ordering_key, p.id
                     LIMIT 1)
             FROM unnest(${param(behind.map((c) => c.id))}::bigint[], ${param(behind.map((c) => c.ordering_key))}::text[])
               AS h (id, ordering_key)
             WHERE h.id IN (SELECT id FROM handled))
           -- Held by a postpone, it is moved by it: not waited for (nor the one after it taken).
           FOR UPDATE SKIP LOCKED)
         RETURNING pg_notify('${CHANNEL}', ${param(`0:${this.name}`)}))`;
    }
    return { ctes, values };
  }

  /** Writes the done of handled messages (doneStatement) alone. */
  private async done(finished: Claimed[]): Promise<void> {
    const { ctes, values } = this.doneStatement(finished, 1);
    try {
      await this.pool.query(`WITH ${ctes} SELECT 1`, values);
    } finally {
      // Not written: left to lapse, handled again (at least once).
      for (const claimed of finished) clearInterval(claimed.renewal);
    }
  }

  private async failed(claimed: Claimed, err: unknown): Promise<void> {
    const { retryMs, maxRetryMs, maxAttempts } = this.settings;
    if (claimed.attempts >= maxAttempts) {
      this.log.error(
        { err, queue: this.name, message: claimed.message, attempts: claimed.attempts },
        "federation queue: message dropped, its handler failed at every attempt",
      );
      await this.done([claimed]);
      return;
    }
    // Records its handler set before failing are kept, as they would have been written unqueued.
    if (claimed.carried.written.size > 0) {
      const { text, values } = writtenSql(claimed.carried.written, 1);
      await this.pool.query(text, values);
    }
    const delayMs = Math.min(maxRetryMs, retryMs * 2 ** (claimed.attempts - 1));
    this.log.warn(
      { err, queue: this.name, attempts: claimed.attempts, retryInMs: delayMs },
      "federation queue: message handler failed; retried later",
    );
    // What it parked waits for its retry.
    await this.pool.query(
      `WITH waiting AS (
         UPDATE federation_messages SET claimed_by = NULL, run_at = now() + make_interval(secs => $3)
         WHERE id = $1 AND claimed_by = $2 RETURNING ordering_key, run_at),
       kept AS (
         UPDATE federation_messages p SET run_at = waiting.run_at
         FROM waiting
         WHERE p.queue = $5 AND p.ordering_key = waiting.ordering_key AND p.parked)
       SELECT pg_notify('${CHANNEL}', $4) FROM waiting`,
      [claimed.id, claimed.claim, delayMs / 1000, `${delayMs}:${this.name}`, this.name],
    );
  }

  /**
   * Gives back a message claimed but not handled (listen() was stopped meanwhile): parked when it
   * has an ordering key, as a message let go is, so that it holds back the rest of its key.
   */
  private async release(claimed: Claimed): Promise<void> {
    clearInterval(claimed.renewal);
    await this.pool.query(
      `UPDATE federation_messages
       SET claimed_by = NULL, run_at = now(), attempts = attempts - 1, parked = ordering_key IS NOT NULL
       WHERE id = $1 AND claimed_by = $2`,
      [claimed.id, claimed.claim],
    );
  }
}

/** Runs `run`, failing if it has not settled within `ms`. */
async function withTimeout(run: () => Promise<void> | void, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(run),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`message handler timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the workers of one listen() sleep on: woken all at once (a notification, the earliest
 * due time known, an abort), or each after the poll interval. `generation` counts wake-ups, so
 * that one that came between a worker's look at the queue and its sleep is not slept through.
 */
class Wakeup {
  generation = 0;
  private readonly sleepers = new Set<() => void>();
  private timer?: NodeJS.Timeout;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly pollMs: number) {}

  /**
   * Wakes every worker in `ms` (now for 0), unless an earlier wake-up is due. A wake-up for
   * something else meanwhile leaves it set: a claim woken just before a message falls due finds it
   * not yet due, and the look for what comes next just after (run_at <= now()) no longer sees it,
   * so without this wake-up the message waited for the poll (a retry 5 s late under load).
   */
  in(ms: number): void {
    if (ms <= 0) {
      this.wake();
      return;
    }
    if (ms >= this.pollMs) return;
    // A millisecond more: run_at is kept to the millisecond, rounded.
    const at = Date.now() + ms + 1;
    if (at >= this.timerAt) return;
    this.timerAt = at;
    this.arm();
  }

  private arm(): void {
    clearTimeout(this.timer);
    // Never negative: the clock may pass timerAt between in() and here (Node warns of it).
    const delay = Math.max(0, this.timerAt - Date.now());
    this.timer = setTimeout(() => {
      // libuv's clock can lag Date.now() under load, and its timer fire early: not before its time.
      if (Date.now() < this.timerAt) return this.arm();
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, delay);
  }

  /** Sleeps until a wake-up after generation `seen`, the poll interval, or the abort. */
  wait(seen: number, signal: AbortSignal | undefined): Promise<void> {
    if (seen !== this.generation || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(poll);
        this.sleepers.delete(done);
        resolve();
      };
      const poll = setTimeout(done, this.pollMs);
      this.sleepers.add(done);
    });
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.wake();
  }

  private wake(): void {
    this.generation++;
    const sleepers = [...this.sleepers];
    this.sleepers.clear();
    for (const done of sleepers) done();
  }
}
