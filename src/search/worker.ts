// Drains the search outbox into Meilisearch in batches. A batch is claimed by leasing its rows
// (next_attempt_at pushed ahead, and pushed again while the batch runs, so no other worker takes
// it however long Meilisearch takes), applied, then deleted.
//
// Outages and refusals are told apart (refusesDocument): when Meilisearch does not answer, or
// answers with anything but a refusal of a document (a rotated key, a full disk, an internal
// error), the whole batch goes back with exponential backoff, never split and never set aside:
// an outage only delays updates, and is logged once until it ends. When Meilisearch refuses a
// document, the batch is split in halves until the refused rows are found, so one bad row holds
// back no other; a row refused MAX_REFUSALS times is set aside with a log line.
//
// A note deleted while its upsert is under way could come back (the upsert read it before, and
// lands after the remove another worker sent): after each upsert the ids sent are read again and
// the notes gone meanwhile removed. Their remove rows, drained later, are then sent after it.
//
// The outbox position: after its documents succeeded, a batch takes the next position from
// search_index_state and writes it into the index's marker, under the state row's lock, so the
// markers reach Meilisearch in the order of their positions; PostgreSQL keeps `position` (the
// last handed out) and `confirmed` (the last the marker is known to hold), and the batch's rows
// are deleted only once a position at least its own is confirmed. So confirmed <= the marker's
// position <= position always holds, unless the index or the database was restored to an earlier
// state, in which the index lacks what the database applied, or holds what it never did
// (src/search/rebuild.ts, completeness).
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import { Prisma } from "../db/client.ts";
import { RepeatedFailure } from "../log.ts";
import { type IndexedNote, refusesDocument, type SearchIndex } from "./meilisearch.ts";

const BATCH = 500;
const LEASE_SECONDS = 60;
const MAX_BACKOFF_SECONDS = 300;
/** Refusals of a row by Meilisearch (outages never count) before it is set aside. */
export const MAX_REFUSALS = 10;

export interface Claimed {
  id: bigint;
  op: "upsert" | "remove" | "account";
  target_id: bigint;
  attempts: number;
  refusals: number;
}

/** What a worker reports (src/metrics.ts). */
export interface SearchWorkerMetrics {
  searchOutage(): void;
}

/**
 * The claim of a batch: due rows, the longest due first, read along the (next_attempt_at, id)
 * index so that a backlog of any size is never sorted whole, and updated by their ids (an IN
 * would let the planner join by scanning the table). The order rows are applied in
 * matters only within a note, and a note's upsert reads the note as it is then (and is read again
 * after it): rows of one note in two batches may be applied in any order.
 */
export function claimSql(batch = BATCH, leaseSeconds = LEASE_SECONDS): Prisma.Sql {
  return Prisma.sql`
    UPDATE search_outbox SET next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    WHERE id = ANY(ARRAY(
      SELECT id FROM search_outbox WHERE next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT ${batch}
      FOR UPDATE SKIP LOCKED))
    RETURNING id, op::text AS op, target_id, attempts, refusals`;
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

/**
 * Upserts notes, then removes those deleted meanwhile (read again once the upsert succeeded).
 * Their removal is enqueued after the upsert, and a remove row
 * written by a deletion after the read is drained after it too, so a deleted note stays deleted.
 */
export async function upsertChecked(db: Db, index: SearchIndex, notes: IndexedNote[]): Promise<void> {
  if (notes.length === 0) return;
  await index.upsert(notes);
  const sent = notes.map((n) => n.id);
  const still = await db.note.findMany({ where: { id: { in: sent } }, select: { id: true } });
  const kept = new Set(still.map((n) => n.id));
  const gone = sent.filter((id) => !kept.has(id));
  await removeNoted(db, index, gone);
}

/**
 * Removes notes from the index, keeping their ids while a rebuild of it holds its lease: the
 * rebuild removes them from its fresh index too once swapped in (its copy may have read them before).
 */
export async function removeNoted(db: Db, index: SearchIndex, ids: bigint[]): Promise<void> {
  if (ids.length === 0) return;
  // Kept before the removal is sent: one sent before the swap is then surely seen by the rebuild.
  await db.$executeRaw`
    INSERT INTO search_rebuild_removes (index_name, target_id)
    SELECT ${index.name}, unnest(${ids}::bigint[])
    WHERE EXISTS (SELECT FROM search_index_state WHERE index_name = ${index.name} AND rebuild_owner IS NOT NULL)
    ON CONFLICT DO NOTHING`;
  await index.remove(ids);
}

/**
 * Writes the outbox position into the index's marker once `apply` succeeded, as the header says;
 * answers once the position covering this batch is confirmed (or there is no state row: no
 * index was ever built, so there is no marker to keep).
 */
export async function confirmPosition(db: Db, index: SearchIndex): Promise<void> {
  const [taken] = await db.$queryRaw<{ position: bigint }[]>`
    UPDATE search_index_state SET position = position + 1 WHERE index_name = ${index.name} RETURNING position`;
  if (!taken) return;
  const own = taken.position;
  // Enqueued under the row's lock: markers reach Meilisearch in the order of their positions.
  const sent = await db.$transaction(
    async (tx) => {
      const [state] = await tx.$queryRaw<{ position: bigint; confirmed: bigint }[]>`
        SELECT position, confirmed FROM search_index_state WHERE index_name = ${index.name} FOR UPDATE`;
      // A later batch's marker, confirmed, covers this one: its documents were applied before.
      if (state.confirmed >= own) return undefined;
      return { position: state.position, wait: await index.markPosition(Number(state.position)) };
    },
    { timeout: 30_000 },
  );
  if (!sent) return;
  await sent.wait();
  await db.$executeRaw`
    UPDATE search_index_state SET confirmed = greatest(confirmed, ${sent.position})
    WHERE index_name = ${index.name}`;
}

export class SearchWorker {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;
  private readonly outage: RepeatedFailure;

  constructor(
    private readonly db: Db,
    private readonly index: SearchIndex,
    private readonly log: Logger,
    private readonly metrics?: SearchWorkerMetrics,
    private readonly batch = BATCH,
  ) {
    this.outage = new RepeatedFailure(log, `search index "${index.name}" not updated (Meilisearch or the database)`);
  }

  /**
   * Applies one batch; answers how many outbox rows it took. Throws when the index does not
   * answer, or answers anything but a refusal of a document (the batch is then backed off whole).
   */
  async drainOnce(): Promise<number> {
    const claimed = await this.db.$queryRaw<Claimed[]>(claimSql(this.batch));
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
      const { applied, failed } = await applyBisecting(claimed, (rows) => this.apply(rows), refusesDocument);
      if (applied.length) await confirmPosition(this.db, this.index);
      await this.db.$executeRaw`DELETE FROM search_outbox WHERE id = ANY(${applied.map((c) => c.id)})`;
      for (const { row, err } of failed) await this.refused(row, err);
    } catch (err) {
      await this.backOff(ids).catch(() => {});
      this.metrics?.searchOutage();
      throw err;
    } finally {
      clearInterval(renew);
    }
    return claimed.length;
  }

  private async backOff(ids: bigint[], refused = false): Promise<void> {
    await this.db.$executeRaw`
      UPDATE search_outbox
      SET attempts = attempts + 1, refusals = refusals + ${refused ? 1 : 0},
          next_attempt_at = now() + make_interval(secs => least(${MAX_BACKOFF_SECONDS}, power(2, attempts + 1)))
      WHERE id = ANY(${ids})`;
  }

  private async refused(row: Claimed, err: unknown): Promise<void> {
    if (row.refusals + 1 < MAX_REFUSALS) return this.backOff([row.id], true);
    await this.db.$executeRaw`
      UPDATE search_outbox SET attempts = attempts + 1, refusals = refusals + 1, next_attempt_at = 'infinity'
      WHERE id = ${row.id}`;
    this.log.error(
      { err, outboxId: row.id.toString(), op: row.op, noteId: row.target_id.toString(), refusals: row.refusals + 1 },
      "search outbox row set aside: Meilisearch refused its document every time (searches still find the note through PostgreSQL; a reindex retries it)",
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
    await removeNoted(this.db, this.index, removed);
    await upsertChecked(this.db, this.index, found);
  }

  /** Drains in the background until stopped: at once while there is work, else every second. */
  start(idleMs = 1000): void {
    const loop = async () => {
      if (this.stopped) return;
      let took = 0;
      try {
        this.running = this.drainOnce();
        took = (await this.running) as number;
        // Nothing due is no proof that Meilisearch answers again: rows may be backing off.
        if (took > 0) this.outage.succeeded();
      } catch (err) {
        this.outage.failed(err);
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
