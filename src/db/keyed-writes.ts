// Writes that wait for one another, sent together. A note's statement updates its author's counter
// row and holds that row until its commit is flushed, so one account's notes commit one at a time,
// a flush each, however many connections post them (bench/README.md, "One account's notes
// together"); a viral note's reactions each paid a statement's fixed cost in PostgreSQL (its plan
// started, its triggers set up, its commit) for one row (bench/README.md, "Reactions in one
// statement"). Here the writes of one key (the author, the note) that arrive while one of that key
// runs wait in this process and then run together: in one transaction (KeyedWrites), or as one
// statement of many rows (KeyedBatches). A key written alone runs each write as before. Nothing
// waits on a timer: the first write of a key goes at once, and what gathers behind it goes when it
// is done. (DataLoader, which GraphQL's loaders use, batches what is asked within one tick: each
// request here comes in a tick of its own.)
import { type Db, type Prisma, queryRows, queryRowsTogether } from "./client.ts";

interface Waiting<I, O> {
  item: I;
  resolve(out: O): void;
  reject(err: unknown): void;
}

export class KeyedBatches<I, O> {
  /** Each key with a write running: the writes waiting for it. */
  private readonly waiting = new Map<string, Waiting<I, O>[]>();

  private readonly alone: (item: I) => Promise<O>;

  /**
   * `together` writes several items and answers each in order (undefined, or an error: each is
   * then written alone); `alone` writes one, by default as `together` of one. At most `most`
   * items go together.
   */
  constructor(
    private readonly together: (items: I[]) => Promise<O[] | undefined>,
    private readonly most: number,
    alone?: (item: I) => Promise<O>,
  ) {
    this.alone = alone ?? (async (item) => ((await together([item])) as O[])[0]);
  }

  /** What writing `item` answers, written alone or together with others of `key`. */
  run(key: string, item: I): Promise<O> {
    const waiting = this.waiting.get(key);
    if (waiting) return new Promise<O>((resolve, reject) => waiting.push({ item, resolve, reject }));
    this.waiting.set(key, []);
    const alone = this.alone(item);
    alone.then(
      () => this.runWaiting(key),
      () => this.runWaiting(key),
    );
    return alone;
  }

  private async runWaiting(key: string): Promise<void> {
    for (let waiting = this.waiting.get(key); waiting?.length; waiting = this.waiting.get(key)) {
      await this.runTogether(waiting.splice(0, this.most));
    }
    this.waiting.delete(key);
  }

  private async runTogether(batch: Waiting<I, O>[]): Promise<void> {
    const together =
      batch.length > 1 ? await this.together(batch.map((w) => w.item)).catch(() => undefined) : undefined;
    if (together) {
      for (const [i, w] of batch.entries()) w.resolve(together[i]);
      return;
    }
    // One write alone, or one that failed among others and took them with it (a row it names
    // deleted meanwhile): each runs alone, to its own answer or error. Side by side, not one
    // after another: with the database stalled, the last of a batch would have waited for each
    // before it.
    await Promise.all(batch.map((w) => this.alone(w.item).then(w.resolve, w.reject)));
  }
}

/** At most this many statements in one transaction. */
const MOST_TOGETHER = 32;

/** Statements of one key run together in one transaction: one lock wait and one flush for all. */
export class KeyedWrites {
  private readonly batches: KeyedBatches<Prisma.Sql, unknown[]>;

  constructor(db: Db) {
    this.batches = new KeyedBatches(
      async (queries) => (await queryRowsTogether(db, queries))?.map((rows) => rows ?? []),
      MOST_TOGETHER,
      (query) => queryRows(db, query),
    );
  }

  /** The rows of the write `query`, run alone or together with others of `key`. */
  run<T>(key: string, query: Prisma.Sql): Promise<T[]> {
    return this.batches.run(key, query) as Promise<T[]>;
  }
}

/** `make(db)`, one for each client (so one per process), made at its first use. */
export function perClient<T extends object>(make: (db: Db) => T): (db: Db) => T {
  const made = new WeakMap<Db, T>();
  return (db) => {
    let found = made.get(db);
    if (!found) {
      found = make(db);
      made.set(db, found);
    }
    return found;
  };
}

/** `db`'s KeyedWrites. */
export const keyedWrites = perClient((db) => new KeyedWrites(db));
