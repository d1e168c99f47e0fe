// Rebuilding the Meilisearch index from PostgreSQL (`search reindex`, and by itself at start
// when the index is missing or was folded by older code), and the completeness marker that
// says when the index may narrow searches.
//
// A rebuild copies every note into a fresh index, writes a new generation into it, swaps it in,
// sends again the notes of every transaction that may have been open when the copy began, and
// only then writes the same generation into PostgreSQL. Searches compare the two on every query:
// until they match, PostgreSQL answers alone, so an empty, partial or foreign index never hides
// a note. Outbox rows are never dropped by a rebuild: applying one twice changes nothing.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Db, Prisma } from "../db/client.ts";
import { FOLDING_VERSION } from "./fold.ts";
import type { IndexCondition, IndexedNote, Marker, SearchIndex } from "./meilisearch.ts";

const BATCH = 2000;
const LEASE_SECONDS = 120;
/** Notes are sent again from this long before the oldest transaction open when the copy began. */
const RESEND_MARGIN_SECONDS = 300;

export class RebuildRunning extends Error {}

/** The marker PostgreSQL holds for an index: the generation its last complete rebuild wrote. */
export async function storedMarker(db: Db, indexName: string): Promise<Marker | undefined> {
  const state = await db.searchIndexState.findUnique({ where: { indexName } });
  return state?.generation && state.folding !== null
    ? { generation: state.generation, folding: state.folding }
    : undefined;
}

/**
 * From when notes must be sent again once the fresh index is in: a note's created_at is its
 * transaction's start, so one whose transaction began before the copy and committed after the
 * copy passed its id is in neither, unless sent again. Every transaction open now began at the
 * oldest xact_start; the margin covers sessions of other database roles, whose times are hidden.
 */
export async function resendFrom(db: Db): Promise<Date> {
  const [row] = await db.$queryRaw<{ from: Date }[]>`
    SELECT least(now(), min(xact_start)) - make_interval(secs => ${RESEND_MARGIN_SECONDS}) AS "from"
    FROM pg_stat_activity WHERE datname = current_database()`;
  return row.from;
}

/** Every note matching `where`, in id order, BATCH at a time. */
export async function* notesByBatch(db: Db, where: Prisma.NoteWhereInput = {}): AsyncGenerator<IndexedNote[]> {
  let after = -1n;
  for (;;) {
    const batch = await db.note.findMany({
      where: { AND: [where, { id: { gt: after } }] },
      orderBy: { id: "asc" },
      take: BATCH,
      select: { id: true, content: true, cwComment: true },
    });
    if (batch.length === 0) return;
    after = batch[batch.length - 1].id;
    yield batch;
  }
}

/** Takes the rebuild lease of an index for `owner` unless another holds it; answers whether it did. */
async function claimLease(db: Db, indexName: string, owner: string): Promise<boolean> {
  await db.searchIndexState.upsert({ where: { indexName }, create: { indexName }, update: {} });
  const taken = await db.$executeRaw`
    UPDATE search_index_state
    SET rebuild_owner = ${owner}, rebuild_until = now() + make_interval(secs => ${LEASE_SECONDS})
    WHERE index_name = ${indexName} AND (rebuild_until IS NULL OR rebuild_until < now() OR rebuild_owner = ${owner})`;
  return taken === 1;
}

/** Whether some process holds the rebuild lease of an index now. */
export async function rebuildRunning(db: Db, indexName: string): Promise<boolean> {
  const [row] = await db.$queryRaw<{ running: boolean }[]>`
    SELECT EXISTS (SELECT FROM search_index_state
      WHERE index_name = ${indexName} AND rebuild_until >= now()) AS running`;
  return row.running;
}

export interface RebuildReport {
  notes: number;
  resent: number;
  generation: string;
}

/** Rebuilds the index under its lease; RebuildRunning when another process is rebuilding it. */
export async function rebuildSearchIndex(
  db: Db,
  index: SearchIndex,
  /** Called after each batch reached the fresh index (the copy waits for it). */
  onBatch?: (done: number) => void | Promise<void>,
): Promise<RebuildReport> {
  const owner = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  if (!(await claimLease(db, index.name, owner)))
    throw new RebuildRunning(`a rebuild of the search index "${index.name}" is already running`);
  const renew = setInterval(() => void claimLease(db, index.name, owner).catch(() => {}), (LEASE_SECONDS * 1000) / 4);
  try {
    const from = await resendFrom(db);
    const marker: Marker = { generation: randomUUID(), folding: FOLDING_VERSION };
    let notes = 0;
    await index.rebuild(notesByBatch(db), marker, (done) => {
      notes = done;
      return onBatch?.(done);
    });
    let resent = 0;
    for await (const batch of notesByBatch(db, { createdAt: { gte: from } })) {
      await index.upsert(batch);
      resent += batch.length;
    }
    await db.searchIndexState.update({
      where: { indexName: index.name },
      data: { ...marker, builtAt: new Date() },
    });
    // Rows set aside as refused get another chance against the fresh index.
    await db.$executeRaw`UPDATE search_outbox SET attempts = 0, next_attempt_at = now() WHERE next_attempt_at = 'infinity'`;
    return { notes, resent, generation: marker.generation };
  } finally {
    clearInterval(renew);
    await db.searchIndexState
      .updateMany({
        where: { indexName: index.name, rebuildOwner: owner },
        data: { rebuildOwner: null, rebuildUntil: null },
      })
      .catch(() => {});
  }
}

/** What the index's condition and PostgreSQL's marker mean for searches, and what to do. */
export type Completeness =
  | { complete: true }
  | {
      complete: false;
      /** Whether Meilisearch answers with this key at all (else readiness fails). */
      answers: boolean;
      /**
       * What mends it: an instance rebuilds the index by itself, or applies its settings again,
       * or the operator acts (runs `search reindex`, or a supported Meilisearch).
       */
      fix: "rebuild" | "settings" | "operator";
      reason: string;
    };

export function completeness(condition: IndexCondition, stored: Marker | undefined): Completeness {
  const incomplete = (reason: string, fix: "rebuild" | "settings" | "operator", answers = true) =>
    ({ complete: false, answers, fix, reason }) as const;
  switch (condition.state) {
    case "unreachable":
    case "refused":
      return incomplete(condition.detail, "operator", false);
    case "unsupported":
      return incomplete(condition.detail, "operator");
    case "missing":
      return incomplete("the index does not exist", "rebuild");
    case "present": {
      const marker = condition.marker;
      if (!marker || marker.folding < FOLDING_VERSION)
        return incomplete("the index was built by an older version of Murmur, or never completed", "rebuild");
      if (marker.generation !== stored?.generation || marker.folding !== stored.folding)
        return incomplete(
          "the index and the database name different rebuilds (another database's index, or a restored one); run `npm run cli -- search reindex`",
          "operator",
        );
      if (condition.wrongSettings.length)
        return incomplete(
          `the index's settings differ from Murmur's: ${condition.wrongSettings.join(", ")}`,
          "settings",
        );
      return { complete: true };
    }
  }
}

/** The index's completeness, read now from both sides. */
export async function searchIndexCompleteness(db: Db, index: SearchIndex): Promise<Completeness> {
  const [condition, stored] = await Promise.all([index.condition(), storedMarker(db, index.name)]);
  return completeness(condition, stored);
}
