// The live events' journal (docs/live.md#resume; migration 20261126150000_live_journal): what
// streams show, each event at a position (the writing transaction's xid, then the row's seq) that
// every instance reads in the same order. Rows are read only below the horizon, the oldest
// transaction still running: below it every transaction has ended, so once a position is read
// nothing can still appear before it. A stream that resumes after a position therefore misses
// nothing and repeats nothing, however its notes' ids (minted before commit) are ordered.
import { type Db, Prisma, queryRows } from "../../db/client.ts";

export interface Position {
  xid: bigint;
  seq: bigint;
}

export interface JournalEvent {
  at: Position;
  kind: "n" | "d" | "N" | "A";
  refId: bigint;
  detail: string | null;
}

/** Whether `a` comes after `b`. */
export function isAfter(a: Position, b: Position): boolean {
  return a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq);
}

/** A position as SQL: a row to compare `(e.xid, e.seq)` with. */
export function positionSql(at: Position): Prisma.Sql {
  return Prisma.sql`(${at.xid.toString()}::text::xid8, ${at.seq}::bigint)`;
}

/** Events of the journal `e` after `after`, up to `upTo` included. */
function between(after: Position, upTo: Position): Prisma.Sql {
  return Prisma.sql`(e.xid, e.seq) > ${positionSql(after)} AND (e.xid, e.seq) <= ${positionSql(upTo)}`;
}

/**
 * The notes created after `after`, up to `upTo`, with their positions: what a resumed stream may
 * have missed, the newest REPLAY_SCAN of them (its timeline's rule then picks its own, given as
 * ids: an index lookup each, where a condition on a subquery had the planner walk the timeline).
 */
export async function notesCreatedBetween(db: Db, after: Position, upTo: Position): Promise<Map<bigint, Position>> {
  const rows = await queryRows<RawEvent>(
    db,
    Prisma.sql`
    SELECT e.xid::text AS xid, e.seq::text AS seq, e.kind, e.ref_id::text AS "refId", e.detail FROM live_events e
    WHERE e.kind = 'n' AND ${between(after, upTo)} ORDER BY e.xid DESC, e.seq DESC LIMIT ${REPLAY_SCAN}`,
  );
  return new Map(rows.map((row) => [BigInt(row.refId), parseEvent(row).at]));
}

/** Notes a replay looks at, at most: a client away that long has missed more than a replay sends. */
const REPLAY_SCAN = 5_000;

/** The notifications of `recipient` and the announcements after `after`, up to `upTo`: the newest `most`. */
export async function notificationsBetween(
  db: Db,
  recipient: bigint,
  after: Position,
  upTo: Position,
  most: number,
): Promise<JournalEvent[]> {
  const rows = await queryRows<RawEvent>(
    db,
    Prisma.sql`
    SELECT e.xid::text AS xid, e.seq::text AS seq, e.kind, e.ref_id::text AS "refId", e.detail FROM live_events e
    WHERE ((e.kind = 'N' AND e.detail = ${recipient.toString()}) OR e.kind = 'A') AND ${between(after, upTo)}
    ORDER BY e.xid DESC, e.seq DESC LIMIT ${most}`,
  );
  return rows.map(parseEvent);
}

/** Rows read in one go: a backlog is read in several. */
export const BATCH = 500;

/**
 * The events after `after` below the horizon, oldest first, at most BATCH; `horizon` is where the
 * next read may start when there are none, and `waiting` says whether events that committed are
 * held back by an older transaction still running (nothing will announce its end).
 */
export async function readJournal(
  db: Db,
  after: Position,
): Promise<{ events: JournalEvent[]; horizon: Position; waiting: boolean }> {
  const [row] = await queryRows<{ horizon: string; waiting: boolean; events: RawEvent[] }>(db, journalRead(after));
  return {
    events: row.events.map(parseEvent),
    horizon: { xid: BigInt(row.horizon), seq: 0n },
    waiting: row.waiting,
  };
}

/**
 * readJournal's statement. `waiting` is the newest event's xid against the horizon, one probe of
 * the position index: asked as EXISTS of an event at or past the horizon, the planner walked the
 * whole journal when there was none (all but always), 80-100 ms at 1,000,000 events before every
 * delivery (bench/README.md, live fan-out).
 */
export function journalRead(after: Position): Prisma.Sql {
  return Prisma.sql`
    SELECT pg_snapshot_xmin(s)::text AS horizon,
      COALESCE((SELECT max(e.xid) FROM live_events e) >= pg_snapshot_xmin(s), false) AS waiting,
      COALESCE((SELECT json_agg(r ORDER BY r.xid::xid8, r.seq::bigint) FROM (
        SELECT e.xid::text AS xid, e.seq::text AS seq, e.kind, e.ref_id::text AS "refId", e.detail
        FROM live_events e
        WHERE (e.xid, e.seq) > ${positionSql(after)} AND e.xid < pg_snapshot_xmin(s)
        ORDER BY e.xid, e.seq LIMIT ${BATCH}) r), '[]') AS events
    FROM pg_current_snapshot() s`;
}

/** The horizon now: every event before it has been written, none after it read yet. */
export async function journalHorizon(db: Db): Promise<Position> {
  const [row] = await queryRows<{ horizon: string }>(
    db,
    Prisma.sql`
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`,
  );
  return { xid: BigInt(row.horizon), seq: 0n };
}

/** Which transactions had committed at a moment (PostgreSQL's pg_snapshot, as numbers). */
export interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  running: Set<bigint>;
}

/** The snapshot now, of the whole cluster as the journal's positions are. */
export async function journalSnapshot(db: Db): Promise<Snapshot> {
  const [row] = await queryRows<{ snapshot: string }>(db, Prisma.sql`SELECT pg_current_snapshot()::text AS snapshot`);
  const [xmin, xmax, running] = row.snapshot.split(":");
  return { xmin: BigInt(xmin), xmax: BigInt(xmax), running: new Set(running ? running.split(",").map(BigInt) : []) };
}

/** Whether the transaction `xid` had committed (or ended) when `snapshot` was taken. */
export function endedIn(snapshot: Snapshot, xid: bigint): boolean {
  return xid < snapshot.xmin || (xid < snapshot.xmax && !snapshot.running.has(xid));
}

/**
 * Where a stream resumed with Last-Event-ID `id` (a note, notification or announcement it was
 * sent) stands. An id the journal no longer holds (older than JOURNAL_HOURS) or never held stands
 * before the first event of a higher id, as ids mostly follow commit order; past every event,
 * at the horizon.
 */
export async function positionOf(db: Db, id: bigint): Promise<Position> {
  const [sent] = await queryRows<{ xid: string; seq: string }>(
    db,
    Prisma.sql`
    SELECT xid::text, seq::text FROM live_events WHERE ref_id = ${id} AND kind <> 'd' ORDER BY seq LIMIT 1`,
  );
  if (sent) return { xid: BigInt(sent.xid), seq: BigInt(sent.seq) };
  const [next] = await queryRows<{ xid: string; seq: string }>(
    db,
    Prisma.sql`
    SELECT xid::text, seq::text FROM live_events WHERE ref_id > ${id} AND kind <> 'd' ORDER BY ref_id LIMIT 1`,
  );
  if (next) return { xid: BigInt(next.xid), seq: BigInt(next.seq) - 1n };
  return journalHorizon(db);
}

/** How long a resumed stream can find where it stood: EventSource reconnects within seconds. */
export const JOURNAL_HOURS = 6;
const PRUNE_BATCH = 10_000;

/**
 * Forgets events older than JOURNAL_HOURS, a bounded batch at a time, by seq (which grows with
 * time): an index on their time would cost every event's insert.
 */
export async function pruneJournal(db: Db): Promise<void> {
  for (let batch = 0; batch < 100; batch++) {
    const deleted = await db.$executeRaw`
      DELETE FROM live_events WHERE seq IN (
        SELECT seq FROM live_events ORDER BY seq LIMIT ${PRUNE_BATCH})
      AND created_at < now() - make_interval(hours => ${JOURNAL_HOURS})`;
    if (deleted < PRUNE_BATCH) return;
  }
}

interface RawEvent {
  xid: string;
  seq: string;
  kind: JournalEvent["kind"];
  refId: string;
  detail: string | null;
}

function parseEvent(raw: RawEvent): JournalEvent {
  return {
    at: { xid: BigInt(raw.xid), seq: BigInt(raw.seq) },
    kind: raw.kind,
    refId: BigInt(raw.refId),
    detail: raw.detail,
  };
}
