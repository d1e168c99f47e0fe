// Writes that wait for one another, sent together. A statement of one row pays PostgreSQL's fixed
// costs of a statement (its plan started, its triggers set up, its commit and flush) for that row:
// a viral note's reactions, and notes posted side by side, paid them once each (bench/README.md,
// "Reactions in one statement", "Notes in one statement"); and one account's notes, each holding
// its counter row until its commit was flushed, committed one at a time however many connections
// posted them ("One account's notes together"). Here the writes of one key (a note, a lane of
// authors) that arrive while one of that key runs wait in this process and then go as one
// statement of many rows. A key written alone runs each write as before. Nothing waits on a timer:
// the first write of a key goes at once, and what gathers behind it goes when it is done.
// (DataLoader, which GraphQL's loaders use, batches what is asked within one tick: each request
// here comes in a tick of its own.)
import type { Db } from "./client.ts";

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
