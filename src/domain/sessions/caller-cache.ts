// The accounts of recent callers, so that an authenticated request does not read its caller's
// row again (one database round trip of the two or three a timeline page takes). PostgreSQL
// keeps it true: a trigger NOTIFYs every change to an account row (prisma/migrations/
// *_account_changes), whether made here, by another instance or by the CLI, and each instance
// LISTENs and forgets that account. While no connection listens, nothing is kept.
import type { Logger } from "pino";
import { type Db, Prisma, queryRows } from "../../db/client.ts";
import { KeyedBatches } from "../../db/keyed-writes.ts";
import { Listener } from "../../db/listener.ts";
import { unplannedArray } from "../../db/one-of.ts";
import type { Account } from "../../generated/prisma/client.ts";

/**
 * The caller's account as authentication gives it: without the counters and time stamp that
 * other accounts' actions move (a note, a follow), which the trigger leaves unnotified so that
 * posting does not empty the cache. Whatever shows them reads the account afresh.
 */
export type CallerAccount = Omit<Account, "followersCount" | "notesCount" | "updatedAt">;

/** Every column of accounts under its Prisma name (each column is its field's name in snake case). */
const ACCOUNT_COLUMNS = Prisma.raw(
  Object.values(Prisma.AccountScalarFieldEnum)
    .map((field) => `${field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} AS "${field}"`)
    .join(", "),
);

/**
 * Accounts that are not deleted, as Prisma's findUnique gives them (null for any other), in the
 * order of `ids`, read through node-postgres (queryRows): a caller the cache does not hold costs a
 * request this read, and Prisma's runtime around it was ~5% of the server's CPU where every
 * request is another caller (a crowd reacting to one note, bench/README.md "Idle machine").
 * test/caller-read.test.ts holds the two equal.
 */
export async function readCallers(db: Db, ids: bigint[]): Promise<(Account | null)[]> {
  // Cast again: ANY of the array's value, not of a sub-query's rows.
  const rows = await queryRows<Account>(
    db,
    Prisma.sql`SELECT ${ACCOUNT_COLUMNS} FROM accounts
      WHERE id = ANY (${unplannedArray(ids, "bigint")}::bigint[]) AND deleted_at IS NULL`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** At most this many callers read together. */
const MOST_TOGETHER = 64;

/**
 * `read` (readCallers) of one id at a time, the ids asked for while a read runs read together
 * after it (src/db/keyed-writes.ts): a crowd of new callers (a viral note's reactions) took a
 * statement each.
 */
export function callerReader(
  read: (ids: bigint[]) => Promise<(Account | null)[]>,
): (id: bigint) => Promise<Account | null> {
  const batches = new KeyedBatches<bigint, Account | null>(read, MOST_TOGETHER);
  return (id) => batches.run("", id);
}

export const ACCOUNT_CHANGES_CHANNEL = "murmur_account_changes";
const MAX_ENTRIES = 10_000;
// A bound on staleness, should a notification ever be lost without the connection failing.
const TTL_MS = 60_000;

type Entry = { account: CallerAccount; at: number };

export class CallerCache {
  // Two generations, MAX_ENTRIES / 2 each: a read goes into the newer, and when it is full the
  // older is dropped whole. Evicting the oldest entry of one Map (`keys().next()`, then delete)
  // had every miss walk past the entries deleted before it, which V8 keeps until the table is
  // rebuilt: with every request another caller (a crowd reacting to one note), 2.6% of the
  // server's main thread.
  private recent = new Map<bigint, Entry>();
  private older = new Map<bigint, Entry>();
  /** Bumped by every change heard: a read begun before it must not be kept. */
  private generation = 0;
  private listening = false;
  private readonly listener: Listener;

  constructor(
    databaseUrl: string,
    private readonly read: (id: bigint) => Promise<CallerAccount | null>,
    log: Logger,
  ) {
    this.listener = new Listener(
      databaseUrl,
      [ACCOUNT_CHANGES_CHANNEL],
      {
        notification: (_channel, payload) => this.forget(/^[0-9]{1,20}$/.test(payload) ? BigInt(payload) : undefined),
        // Nothing read before now was watched.
        listening: () => {
          this.forget();
          this.listening = true;
        },
        // Until it listens again, every caller is read (the listener says why it stopped).
        lost: () => {
          this.listening = false;
          this.forget();
        },
      },
      log,
    );
  }

  async get(id: bigint): Promise<CallerAccount | null> {
    const hit = this.recent.get(id) ?? this.older.get(id);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.account;
    const generation = this.generation;
    const account = await this.read(id);
    if (account && this.listening && generation === this.generation) {
      this.older.delete(id);
      if (this.recent.size >= MAX_ENTRIES / 2) {
        this.older = this.recent;
        this.recent = new Map();
      }
      this.recent.set(id, { account, at: Date.now() });
    }
    return account;
  }

  /** Forgets one account, or all. */
  forget(id?: bigint): void {
    this.generation++;
    if (id === undefined) {
      this.recent.clear();
      this.older.clear();
    } else {
      this.recent.delete(id);
      this.older.delete(id);
    }
  }

  async close(): Promise<void> {
    this.listening = false;
    this.forget();
    await this.listener.close();
  }

  /**
   * Opens the listening connection (again a second later should it fail: src/db/listener.ts);
   * the cache keeps accounts from the moment it listens.
   */
  listen(): void {
    this.listener.listen();
  }
}
