// Drains the search outbox into Meilisearch in batches. A batch is claimed by leasing its rows
// (next_attempt_at pushed ahead), applied, then deleted; a failure puts the rows back with
// exponential backoff. An outage only delays updates: the rows wait in PostgreSQL.
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import type { IndexedNote, SearchIndex } from "./meilisearch.ts";

const BATCH = 500;
const LEASE_SECONDS = 60;
const MAX_BACKOFF_SECONDS = 300;

interface Claimed {
  id: bigint;
  op: "upsert" | "remove" | "account";
  target_id: bigint;
  attempts: number;
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

  /** Applies one batch; answers how many outbox rows it took. Throws when the index fails. */
  async drainOnce(): Promise<number> {
    const claimed = await this.db.$queryRaw<Claimed[]>`
      UPDATE search_outbox SET next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
      WHERE id IN (
        SELECT id FROM search_outbox WHERE next_attempt_at <= now() ORDER BY id LIMIT ${BATCH}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, op::text AS op, target_id, attempts`;
    if (claimed.length === 0) return 0;
    try {
      await this.apply(claimed);
    } catch (err) {
      await this.db.$executeRaw`
        UPDATE search_outbox
        SET attempts = attempts + 1,
            next_attempt_at = now() + make_interval(secs => least(${MAX_BACKOFF_SECONDS}, power(2, attempts + 1)))
        WHERE id = ANY(${claimed.map((c) => c.id)})`;
      throw err;
    }
    await this.db.searchOutbox.deleteMany({ where: { id: { in: claimed.map((c) => c.id) } } });
    return claimed.length;
  }

  private async apply(claimed: Claimed[]): Promise<void> {
    // The last change to a note wins; an account's change re-reads all its notes.
    const last = new Map<bigint, Claimed["op"]>();
    const accounts = new Set<bigint>();
    for (const row of [...claimed].sort((a, b) => (a.id < b.id ? -1 : 1))) {
      if (row.op === "account") accounts.add(row.target_id);
      else last.set(row.target_id, row.op);
    }
    const wanted = [...last].filter(([, op]) => op === "upsert").map(([id]) => id);
    const select = { id: true, content: true, cwComment: true } as const;
    const found: IndexedNote[] = [
      ...(wanted.length ? await this.db.note.findMany({ where: { id: { in: wanted } }, select }) : []),
      ...(accounts.size ? await this.db.note.findMany({ where: { authorId: { in: [...accounts] } }, select }) : []),
    ];
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
