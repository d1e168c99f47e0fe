// Writes that wait for one another on one row lock, sent together. A note's statement updates
// its author's counter row and holds that row until its commit is flushed, so one account's notes
// commit one at a time, a flush each, however many connections post them (bench/README.md,
// "One account's notes together"). Here the statements of one key (the author) that arrive while
// one of that key runs wait in this process and then run together, in one transaction: one lock
// wait and one flush for all of them. A key posting alone runs each statement as before.
import { type Db, type Prisma, queryRows, queryRowsTogether } from "./client.ts";

/** At most this many statements in one transaction. */
const MOST_TOGETHER = 32;

interface Waiting {
  query: Prisma.Sql;
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

export class KeyedWrites {
  /** Each key with a statement running: the statements waiting for it. */
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(private readonly db: Db) {}

  /** The rows of the write `query`, run alone or together with others of `key`. */
  run<T>(key: string, query: Prisma.Sql): Promise<T[]> {
    const waiting = this.waiting.get(key);
    if (waiting)
      return new Promise<T[]>((resolve, reject) => waiting.push({ query, resolve: resolve as never, reject }));
    this.waiting.set(key, []);
    const alone = queryRows<T>(this.db, query);
    alone.then(
      () => this.runWaiting(key),
      () => this.runWaiting(key),
    );
    return alone;
  }

  private async runWaiting(key: string): Promise<void> {
    for (let waiting = this.waiting.get(key); waiting?.length; waiting = this.waiting.get(key)) {
      await this.runTogether(waiting.splice(0, MOST_TOGETHER));
    }
    this.waiting.delete(key);
  }

  private async runTogether(batch: Waiting[]): Promise<void> {
    const together =
      batch.length > 1
        ? await queryRowsTogether(
            this.db,
            batch.map((w) => w.query),
          ).catch(() => undefined)
        : undefined;
    if (together) {
      for (const [i, w] of batch.entries()) w.resolve(together[i] ?? []);
      return;
    }
    // One statement alone, or one that failed among others and took them with it (a row it
    // names deleted meanwhile): each runs alone, to its own answer or error.
    for (const w of batch) await queryRows(this.db, w.query).then(w.resolve, w.reject);
  }
}

const writes = new WeakMap<Db, KeyedWrites>();

/** `db`'s KeyedWrites (one per client, so per process). */
export function keyedWrites(db: Db): KeyedWrites {
  let found = writes.get(db);
  if (!found) {
    found = new KeyedWrites(db);
    writes.set(db, found);
  }
  return found;
}
