// Drains the search outbox into Meilisearch in batches. A batch is claimed by leasing its rows
// (next_attempt_at pushed ahead, and pushed again while the batch runs, so no other worker takes
// it however long Meilisearch takes), applied, then deleted. When Meilisearch does not answer,
// the whole batch goes back with exponential backoff: an outage only delays updates. When it
// answers and refuses, the batch is split in halves until the refused rows are found, so one bad
// row holds back no other; a row refused MAX_ATTEMPTS times is set aside with a log line.
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import { type IndexedNote, isRefusal, type SearchIndex } from "./meilisearch.ts";

const BATCH = 500;
const LEASE_SECONDS = 60;
const MAX_BACKOFF_SECONDS = 300;
export const MAX_ATTEMPTS = 10;

export interface Claimed {
  id: bigint;
  op: "upsert" | "remove" | "account";
  target_id: bigint;
  attempts: number;
}

/**
 * Applies `rows` in order, halving what is refused until each refused row stands alone, and
 * answers the rows applied and the rows refused (each with its error). Anything but a refusal
 * (Meilisearch not answering) is thrown at once: splitting would only repeat it.
 */
export async function applyBisecting<T>(
  rows: T[],
  apply: (rows: T[]) => Promise<void>,
  refused: (err: unknown) => boolean,
): Promise<{ applied: T[]; failed: { row: T; err: unknown }[] }> {
  try {
    await apply(rows);
    return { applied: rows, failed: [] };
  } catch (err) {
    if (!refused(err)) throw err;
    if (rows.length === 1) return { applied: [], failed: [{ row: rows[0], err }] };
    const half = Math.ceil(rows.length / 2);
    const first = await applyBisecting(rows.slice(0, half), apply, refused);
    const second = await applyBisecting(rows.slice(half), apply, refused);
    return { applied: [...first.applied, ...second.applied], failed: [...first.failed, ...second.failed] };
  }
}

export class SearchWorker {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly index: SearchIndex,
    private readonly log: Logger,
  ) {}

  /** Applies one batch; answers how many outbox rows it took. Throws when the index does not answer. */
  async drainOnce(): Promise<number> {
    const claimed = await this.db.$queryRaw<Claimed[]>`
      UPDATE search_outbox SET next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
      WHERE id IN (
        SELECT id FROM search_outbox WHERE next_attempt_at <= now() ORDER BY id LIMIT ${BATCH}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, op::text AS op, target_id, attempts`;
    if (claimed.length === 0) return 0;
    claimed.sort((a, b) => (a.id < b.id ? -1 : 1));
    const ids = claimed.map((c) => c.id);
    const renew = setInterval(
      () =>
        void this.db.$executeRaw`
          UPDATE search_outbox SET next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
          WHERE id = ANY(${ids})`.catch(() => {}),
      (LEASE_SECONDS * 1000) / 3,
    );
    try {
      const { applied, failed } = await applyBisecting(claimed, (rows) => this.apply(rows), isRefusal);
      await this.db.searchOutbox.deleteMany({ where: { id: { in: applied.map((c) => c.id) } } });
      for (const { row, err } of failed) await this.refused(row, err);
    } catch (err) {
      await this.backOff(ids);
      throw err;
    } finally {
      clearInterval(renew);
    }
    return claimed.length;
  }

  private async backOff(ids: bigint[]): Promise<void> {
    await this.db.$executeRaw`
      UPDATE search_outbox
      SET attempts = attempts + 1,
          next_attempt_at = now() + make_interval(secs => least(${MAX_BACKOFF_SECONDS}, power(2, attempts + 1)))
      WHERE id = ANY(${ids})`;
  }

  private async refused(row: Claimed, err: unknown): Promise<void> {
    if (row.attempts + 1 < MAX_ATTEMPTS) return this.backOff([row.id]);
    await this.db.$executeRaw`
      UPDATE search_outbox SET attempts = attempts + 1, next_attempt_at = 'infinity' WHERE id = ${row.id}`;
    this.log.error(
      { err, outboxId: row.id.toString(), op: row.op, noteId: row.target_id.toString(), attempts: row.attempts + 1 },
      "search outbox row set aside: Meilisearch refused it every time (searches still find the note through PostgreSQL; a reindex retries it)",
    );
  }

  /** Applies rows in id order: the last change to a note wins. Rows of `account` are from older versions: nothing to do. */
  private async apply(rows: Claimed[]): Promise<void> {
    const last = new Map<bigint, Claimed["op"]>();
    for (const row of rows) if (row.op !== "account") last.set(row.target_id, row.op);
    const wanted = [...last].filter(([, op]) => op === "upsert").map(([id]) => id);
    const found: IndexedNote[] = wanted.length
      ? await this.db.note.findMany({
          where: { id: { in: wanted } },
          select: { id: true, content: true, cwComment: true },
        })
      : [];
    const present = new Set(found.map((n) => n.id));
    const removed = [...last].filter(([id, op]) => op === "remove" || !present.has(id)).map(([id]) => id);
    await this.index.remove(removed);
    await this.index.upsert(found);
  }

  /** Drains in the background until stopped: at once while there is work, else every second. */
  start(idleMs = 1000): void {
    const loop = async () => {
      if (this.stopped) return;
      let took = 0;
      try {
        this.running = this.drainOnce();
        took = (await this.running) as number;
      } catch (err) {
        this.log.warn({ err }, "search index update failed; will retry");
      }
      if (!this.stopped) this.timer = setTimeout(loop, took > 0 ? 0 : idleMs);
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => {});
  }
}
