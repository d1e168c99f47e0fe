// Fedify's key-value store (remote documents and keys it caches, inbox idempotence records) in
// Murmur's PostgreSQL, table federation_kv (prisma/migrations/20261127160000_federation_queue).
// A key, an array of strings, is stored as its JSON: byte-compared (COLLATE "C"), the keys under
// a prefix `["a","b"]` are the one equal to it and those in the range ['["a","b",', '["a","b"-'),
// since ',' and '-' are adjacent bytes and a string's closing quote is never escaped away.
// Expired entries read as absent at once and are deleted in batches every few minutes.
import { AsyncLocalStorage } from "node:async_hooks";
import type { KvKey, KvStore, KvStoreListEntry, KvStoreSetOptions } from "@fedify/fedify";
import { LRUCache } from "lru-cache";
import type pg from "pg";
import { newPool } from "../db/pool.ts";

/**
 * How often a working instance deletes the expired entries (startSweeping). Most rows are not
 * written through this store: the queue's statements write the idempotence records (one a received
 * activity, for a day) and a remote note's storing its key (src/domain/overtaken.ts, for an hour).
 */
const SWEEP_EVERY_MS = 5 * 60_000;
const SWEEP_BATCH = 500;
/** Rows read at a time by list(), so that a large prefix is not held in memory whole. */
const LIST_PAGE = 500;

const LIVE = "(expires_at IS NULL OR expires_at > now())";

/**
 * The entries also kept in this process's memory: the remote keys Fedify fetched, read at every
 * signature check (one statement an inbox POST, and the same object each time, whose parse is then
 * reused: src/federation/parsed-keys.ts). Another instance of a fleet may store a newer key meanwhile;
 * the one remembered here then fails, and Fedify fetches the key again once, as it does for a key
 * kept in the table that a rotation made stale (docs/federation.md#signatures).
 */
const REMEMBERED = ['["_fedify","publicKey",'];
const REMEMBERED_MAX = 10_000;
/** How long an entry is trusted from memory, at most: what another instance deleted is read again after. */
const REMEMBERED_MS = 5 * 60_000;

/**
 * Fedify's record that a received activity was handled: read before its listener runs, written
 * after. A queued message's handler has it carried by the queue's own statements (below).
 */
const IDEMPOTENCE = '["_fedify","activityIdempotence",';

/** The key of Fedify's idempotence record of activity `id` received at `origin`. */
export function idempotenceKey(origin: string, id: string): string {
  return encodeKey(["_fedify", "activityIdempotence", origin, id]);
}

/**
 * What the store's entries a queued message's handler reads and writes, carried by the queue's
 * statements (src/federation/message-queue.ts) rather than each a statement of its own: its claim
 * reads the keys the message names (`read`: a value, or undefined for none), its done writes the
 * idempotence records set meanwhile (`written`), in its transaction. A message is the only one of
 * its activity held at a time (its ordering key, src/federation/inbox.ts), so what its claim read
 * of that activity's record stays true until its done writes it.
 */
export interface CarriedEntries {
  /** False once the handler is done with (or timed out): its writes are the store's own again. */
  open: boolean;
  read: Map<string, unknown>;
  written: Map<string, { value: string; ttl: string | null }>;
}

const carried = new AsyncLocalStorage<CarriedEntries>();

/**
 * The statement (or a common table expression's body) writing idempotence records `entries` (a
 * handler's `written`, or several handlers' together: a key once), its three arrays (keys, JSON
 * values, TTL intervals) the parameters numbered from `from`, as set() writes one entry.
 */
export function writtenSql(entries: CarriedEntries["written"], from: number): { text: string; values: unknown[] } {
  const written = [...entries];
  return {
    text: `INSERT INTO federation_kv (key, value, expires_at)
       SELECT w.key, w.value, now() + w.ttl::interval
       FROM unnest($${from}::text[], $${from + 1}::jsonb[], $${from + 2}::text[]) AS w (key, value, ttl)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
    values: [written.map(([key]) => key), written.map(([, e]) => e.value), written.map(([, e]) => e.ttl)],
  };
}

/** Runs `run` with the store's reads and idempotence writes carried by `entries`. */
export function carryingEntries<T>(entries: CarriedEntries, run: () => T): T {
  return carried.run(entries, run);
}

export interface PostgresKvStoreOptions {
  /** Connections of its own pool (default 2): its statements are single and short. */
  poolSize?: number;
}

export class PostgresKvStore implements KvStore {
  private readonly pool: pg.Pool;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private closed = false;
  /** Bumped before and after every write: a read that overlapped one does not remember what it read. */
  private changes = 0;
  /** Of REMEMBERED's entries, each value and when it expires (ms since the epoch; null: never). */
  private readonly memory = new LRUCache<string, { value: unknown; expiresAt: number | null }>({
    max: REMEMBERED_MAX,
    ttl: REMEMBERED_MS,
  });

  constructor(databaseUrl: string, options: PostgresKvStoreOptions = {}) {
    this.pool = newPool({ connectionString: databaseUrl, max: options.poolSize ?? 2 });
  }

  async get<T = unknown>(key: KvKey): Promise<T | undefined> {
    const k = encodeKey(key);
    const scope = carried.getStore();
    if (scope?.read.has(k)) return scope.read.get(k) as T | undefined;
    const remembered = remembers(k);
    if (remembered) {
      const entry = this.memory.get(k);
      if (entry && (entry.expiresAt === null || entry.expiresAt > Date.now())) return entry.value as T;
    }
    const changes = this.changes;
    const { rows } = await this.pool.query<{ value: T; expires_in: number | null }>(
      `SELECT value, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in
       FROM federation_kv WHERE key = $1 AND ${LIVE}`,
      [k],
    );
    const row = rows[0];
    if (remembered && row && changes === this.changes) this.remember(k, row.value, row.expires_in);
    return row?.value;
  }

  async set(key: KvKey, value: unknown, options?: KvStoreSetOptions): Promise<void> {
    const [k, encoded] = [encodeKey(key), encodeValue(value)];
    const scope = carried.getStore();
    if (scope?.open && k.startsWith(IDEMPOTENCE)) {
      scope.written.set(k, { value: encoded, ttl: ttlOf(options) });
      scope.read.set(k, JSON.parse(encoded));
      return;
    }
    this.unCarry(k);
    this.forget(k);
    await this.pool.query(
      `INSERT INTO federation_kv (key, value, expires_at) VALUES ($1, $2::jsonb, now() + $3::interval)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
      [k, encoded, ttlOf(options)],
    );
    this.forget(k);
    const ttl = remembers(k) ? ttlMsOf(options) : undefined;
    // As it would be read back: JSON, the caller's object not shared.
    if (ttl !== undefined) this.remember(k, JSON.parse(encoded), ttl);
  }

  async delete(key: KvKey): Promise<void> {
    const k = encodeKey(key);
    this.unCarry(k);
    this.forget(k);
    await this.pool.query("DELETE FROM federation_kv WHERE key = $1", [k]);
    this.forget(k);
  }

  /** A write of `key` other than a carried one: what the scope read or deferred of it is void. */
  private unCarry(key: string): void {
    const scope = carried.getStore();
    scope?.read.delete(key);
    scope?.written.delete(key);
  }

  private forget(key: string): void {
    this.changes++;
    this.memory.delete(key);
  }

  private remember(key: string, value: unknown, expiresInMs: number | null): void {
    this.memory.set(key, { value, expiresAt: expiresInMs === null ? null : Date.now() + expiresInMs });
  }

  /**
   * Sets `key` to `newValue` if its value is `expectedValue` (JSON-equal: key order in objects
   * aside), as one statement, so that of two concurrent swaps from one value one wins.
   * `undefined` is no entry (or an expired one): expected, the key must be absent; new, the
   * entry is deleted.
   */
  async cas(key: KvKey, expectedValue: unknown, newValue: unknown, options?: KvStoreSetOptions): Promise<boolean> {
    const k = encodeKey(key);
    this.unCarry(k);
    this.forget(k);
    let swapped: number | null;
    if (expectedValue === undefined && newValue === undefined) {
      return (await this.get(key)) === undefined;
    }
    if (expectedValue === undefined) {
      ({ rowCount: swapped } = await this.pool.query(
        `INSERT INTO federation_kv AS existing (key, value, expires_at) VALUES ($1, $2::jsonb, now() + $3::interval)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
         WHERE existing.expires_at IS NOT NULL AND existing.expires_at <= now()`,
        [k, encodeValue(newValue), ttlOf(options)],
      ));
    } else if (newValue === undefined) {
      ({ rowCount: swapped } = await this.pool.query(
        `DELETE FROM federation_kv WHERE key = $1 AND ${LIVE} AND value = $2::jsonb`,
        [k, encodeValue(expectedValue)],
      ));
    } else {
      ({ rowCount: swapped } = await this.pool.query(
        `UPDATE federation_kv SET value = $3::jsonb, expires_at = now() + $4::interval
         WHERE key = $1 AND ${LIVE} AND value = $2::jsonb`,
        [k, encodeValue(expectedValue), encodeValue(newValue), ttlOf(options)],
      ));
    }
    this.forget(k);
    return (swapped ?? 0) > 0;
  }

  /**
   * The live entries whose key starts with `prefix` (all without one), in the order of their
   * keys' JSON (not the arrays' order: `["a","b"]` comes before `["a"]`).
   */
  async *list(prefix?: KvKey): AsyncIterable<KvStoreListEntry> {
    let after: string | null = null;
    const exact = prefix && prefix.length > 0 ? encodeKey(prefix) : null;
    const under = exact && `${exact.slice(0, -1)},`;
    const past = exact && `${exact.slice(0, -1)}-`;
    for (;;) {
      const { rows }: { rows: { key: string; value: unknown }[] } = await this.pool.query(
        `SELECT key, value FROM federation_kv
         WHERE ($1::text IS NULL OR key = $1 OR (key >= $2 AND key < $3))
           AND ($4::text IS NULL OR key > $4) AND ${LIVE}
         ORDER BY key LIMIT ${LIST_PAGE}`,
        [exact, under, past, after],
      );
      for (const row of rows) yield { key: JSON.parse(row.key) as KvKey, value: row.value };
      if (rows.length < LIST_PAGE) return;
      after = rows[rows.length - 1].key;
    }
  }

  /** Deletes up to a batch of expired entries; answers how many. */
  async deleteExpired(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM federation_kv WHERE key IN (
         SELECT key FROM federation_kv WHERE expires_at <= now() LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`,
    );
    return rowCount ?? 0;
  }

  /**
   * Deletes every expired entry, a batch at a time (each instance of a fleet may: SKIP LOCKED),
   * until the store closes; answers how many. A table that was never swept (millions of rows)
   * does not hold up a shutdown: what is left goes with the next sweep.
   */
  async sweep(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const batch = await this.deleteExpired();
      deleted += batch;
      if (batch < SWEEP_BATCH || this.closed) return deleted;
    }
  }

  /** Sweeps every `everyMs` until close(). */
  startSweeping(everyMs = SWEEP_EVERY_MS): void {
    this.sweeper ??= setInterval(() => {
      // A failed sweep loses nothing: expired entries already read as absent, and the next sweep
      // deletes them.
      this.sweeping ??= this.sweep()
        .catch(() => {})
        .finally(() => {
          this.sweeping = undefined;
        });
    }, everyMs);
    this.sweeper.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await this.sweeping;
    await this.pool.end();
  }
}

function encodeKey(key: KvKey): string {
  return JSON.stringify(key);
}

/** JSON of `value`; `undefined` (which JSON has not) as null. */
function encodeValue(value: unknown): string {
  return JSON.stringify(value) ?? "null";
}

function remembers(key: string): boolean {
  return REMEMBERED.some((prefix) => key.startsWith(prefix));
}

/** The TTL in milliseconds, or null: no expiry; undefined when it has months or years (not remembered then). */
function ttlMsOf(options?: KvStoreSetOptions): number | null | undefined {
  if (options?.ttl == null) return null;
  try {
    // Days are 24 hours, as in the interval PostgreSQL is given.
    return options.ttl.total({ unit: "milliseconds" });
  } catch {
    return undefined;
  }
}

/** The TTL as a PostgreSQL interval (an ISO 8601 duration), or null: no expiry. */
function ttlOf(options?: KvStoreSetOptions): string | null {
  return options?.ttl == null ? null : String(options.ttl);
}
