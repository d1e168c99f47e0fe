// Read replicas (DATABASE_REPLICA_URL, docs/fleet.md#read-replicas): reads that may lag go to a
// streaming replica, and a caller still sees its own writes at once. After a request that may have
// written, the primary's WAL position is kept as the caller's (in Redis, so that every instance
// knows it); a replica serves that caller only once it has replayed past it. Anonymous callers
// wrote nothing they could read back, so any replica that keeps up serves them.
import type { Logger } from "pino";
import type { Redis } from "../redis.ts";
import { createDb, type Db } from "./client.ts";

/** A replica further behind than this serves nobody until it catches up (and /readyz says so). */
export const MAX_LAG_SECONDS = 30;
// How often each replica's replay position is read: a caller who wrote reads from the primary
// for about this long at most after the replica has the write.
const POLL_MS = 200;
// A position is kept longer than any usable replica can lag: once it expires, every usable
// replica has replayed past it.
const POSITION_TTL_MS = 5 * 60_000;
const MEMORY_POSITIONS = 100_000;

export interface ReplicaHealth {
  status: "up" | "behind" | "down";
  /** Seconds of replay lag behind the primary; null when unknown (down). */
  lagSeconds: number | null;
}

/** Where reads went, for the operator (and the fleet test's replica share). */
export interface ReadCounts {
  primary: number;
  replica: number;
}

/** Reads of a caller's writes go where those writes already are. */
export interface ReadRouting {
  /** The client that reads which may lag go to, for this caller (undefined: anonymous). */
  readsFor(accountId: bigint | undefined): Promise<Db>;
  /** Keeps the primary's current WAL position as this account's: a request of it may have written. */
  wrote(accountId: bigint): Promise<void>;
  health(): ReplicaHealth[];
  readonly counts: ReadCounts;
  close(): Promise<void>;
}

/** After a request that may have written: its account's next reads, on any instance, see it. */
export function keepWrites(ctx: {
  replicas?: ReadRouting;
  readYourWrites?: { account?: bigint };
}): Promise<void> | undefined {
  const account = ctx.readYourWrites?.account;
  // Nothing to keep (a read, or no replicas): no promise for the caller to wait on.
  return account === undefined ? undefined : ctx.replicas?.wrote(account);
}

interface Replica {
  db: Db;
  /** Last replay position read, and when; a primary given as a replica is always current. */
  replayed: bigint;
  lagSeconds: number | null;
  polledAt: number;
}

const CURRENT = 2n ** 64n;

/** A WAL position as PostgreSQL writes it (`16/B374D848`). */
export function lsn(text: string): bigint {
  const [high, low] = text.split("/");
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

export function createReadRouting(
  primary: Db,
  replicaUrls: string[],
  redis: Redis | undefined,
  log: Logger,
  poolSize = 20,
): ReadRouting {
  const replicas: Replica[] = replicaUrls.map((url) => ({
    db: createDb(url, () => {}, poolSize),
    replayed: 0n,
    lagSeconds: null,
    polledAt: 0,
  }));
  const positions = redis ? redisPositions(redis) : memoryPositions();
  if (!redis) log.warn("DATABASE_REPLICA_URL without REDIS_URL: callers see their writes only on this instance");
  const counts: ReadCounts = { primary: 0, replica: 0 };
  let next = 0;

  // The primary's WAL position at each poll, over the last MAX_LAG_SECONDS and more: a replica's
  // lag is how long ago the primary had written past what the replica has replayed. (A standby's
  // own replay timestamp would count an idle spell before a write as lag.)
  const history: { at: number; position: bigint }[] = [];
  const HISTORY = Math.ceil((MAX_LAG_SECONDS * 1000) / POLL_MS) + 10;
  const lagOf = (replayed: bigint, now: number): number | null => {
    let since: number | undefined;
    for (let i = history.length - 1; i >= 0 && history[i].position > replayed; i--) since = history[i].at;
    if (since === undefined) return 0;
    // Behind even the oldest position seen: by more than is known.
    return since === history[0].at ? null : (now - since) / 1000;
  };

  const poll = async (replica: Replica) => {
    try {
      const [row] = await replica.db.$queryRaw<{ standby: boolean; replayed: string | null }[]>`
        SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replayed`;
      replica.replayed = !row.standby ? CURRENT : row.replayed ? lsn(row.replayed) : 0n;
      replica.polledAt = Date.now();
      replica.lagSeconds = lagOf(replica.replayed, replica.polledAt);
    } catch (err) {
      if (replica.polledAt) log.warn({ err }, "read replica unreachable; its reads go to the primary");
      replica.polledAt = 0;
      replica.lagSeconds = null;
    }
  };
  const pollAll = async () => {
    try {
      const [{ position }] = await primary.$queryRaw<{ position: string }[]>`
        SELECT pg_current_wal_lsn()::text AS position`;
      history.push({ at: Date.now(), position: lsn(position) });
      if (history.length > HISTORY) history.shift();
    } catch {
      // The primary's own outage is answered elsewhere; replicas are judged on what was seen.
    }
    await Promise.all(replicas.map(poll));
  };
  // One poll at a time: a replica that hangs delays the next rather than piling them up.
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = async (): Promise<void> => {
    await pollAll();
    if (stopped) return;
    timer = setTimeout(() => {
      polling = loop();
    }, POLL_MS);
    timer.unref();
  };
  let polling = loop();

  const usable = (r: Replica) =>
    Date.now() - r.polledAt < 5 * POLL_MS && r.lagSeconds !== null && r.lagSeconds <= MAX_LAG_SECONDS;

  return {
    counts,
    async readsFor(accountId) {
      const candidates = replicas.filter(usable);
      let needed = 0n;
      if (candidates.length && accountId !== undefined) {
        // Where the position cannot be read, the primary is the one place sure to have it.
        const position = await positions.get(accountId).catch(() => CURRENT);
        needed = position ?? 0n;
      }
      const ready = candidates.filter((r) => r.replayed >= needed);
      if (!ready.length) {
        counts.primary++;
        return primary;
      }
      counts.replica++;
      return ready[next++ % ready.length].db;
    },
    async wrote(accountId) {
      const [{ position }] = await primary.$queryRaw<{ position: string }[]>`
        SELECT pg_current_wal_insert_lsn()::text AS position`;
      await positions.raise(accountId, lsn(position)).catch((err) => {
        log.warn({ err }, "a caller's write position was not kept; its next reads may lag");
      });
    },
    health: () =>
      replicas.map((r) => ({
        status: !r.polledAt ? "down" : usable(r) ? "up" : "behind",
        lagSeconds: r.polledAt ? r.lagSeconds : null,
      })),
    async close() {
      stopped = true;
      clearTimeout(timer);
      await polling;
      await Promise.all(replicas.map((r) => r.db.$disconnect()));
    },
  };
}

interface Positions {
  get(accountId: bigint): Promise<bigint | undefined>;
  /** Keeps `position` unless a later one is kept already (two instances may answer one caller). */
  raise(accountId: bigint, position: bigint): Promise<void>;
}

const KEY = "murmur:written:";
// Positions as 16 hex digits compare as strings in the order they compare as numbers.
const RAISE = `
local kept = redis.call('GET', KEYS[1])
if not kept or kept < ARGV[1] then kept = ARGV[1] end
redis.call('SET', KEYS[1], kept, 'PX', ARGV[2])`;

/** Shared by every instance. Fails fast when Redis is down: reads then go to the primary. */
function redisPositions(redis: Redis): Positions {
  return {
    async get(accountId) {
      const kept = await redis.get(KEY + accountId);
      return kept === null ? undefined : BigInt(`0x${kept}`);
    },
    async raise(accountId, position) {
      await redis.eval(RAISE, 1, KEY + accountId, position.toString(16).padStart(16, "0"), POSITION_TTL_MS);
    },
  };
}

/** One instance's own, for a single instance with replicas and no Redis. */
function memoryPositions(): Positions {
  type Kept = { position: bigint; until: number };
  const kept = new Map<bigint, Kept>();
  // The latest position of those pushed out while live: it stands for every caller not kept.
  let evicted: Kept = { position: 0n, until: 0 };
  const live = (entry: Kept | undefined) => (entry && entry.until > Date.now() ? entry : undefined);
  return {
    async get(accountId) {
      return (live(kept.get(accountId)) ?? live(evicted))?.position;
    },
    async raise(accountId, position) {
      const entry = live(kept.get(accountId));
      kept.delete(accountId);
      if (kept.size >= MEMORY_POSITIONS) {
        const [oldest, pushed] = kept.entries().next().value as [bigint, Kept];
        kept.delete(oldest);
        if (live(pushed) && !(live(evicted) && evicted.position > pushed.position)) evicted = pushed;
      }
      const until = Date.now() + POSITION_TTL_MS;
      kept.set(accountId, { position: entry && entry.position > position ? entry.position : position, until });
    },
  };
}
