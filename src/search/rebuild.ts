// Rebuilding the Meilisearch index from PostgreSQL (`search reindex`, and by itself at start
// when the index is missing or was folded by older code), and the completeness marker that
// says when the index may narrow searches.
//
// A rebuild copies every note into a fresh index, writes a new generation into it, swaps it in,
// sends again the notes of every transaction that may have been open when the copy began,
// removes from it the notes removed from the live index meanwhile (the copy may have read them
// before: src/search/worker.ts keeps their ids while the rebuild holds its lease), and only then
// writes the same generation into PostgreSQL. Searches compare the two on every query: until
// they match, PostgreSQL answers alone, so an empty, partial or foreign index never hides a note.
// Outbox rows are never dropped by a rebuild: applying one twice changes nothing.
//
// The generation is kept in PostgreSQL as pending before the swap: a rebuild that dies after its
// swap (or whose swap outlived its wait) leaves an index carrying it, which the next check
// rebuilds by itself. A rebuild holds its lease or stops: renewed as it goes, checked before the
// swap, and the generation is written only by the lease's holder.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Db, Prisma } from "../db/client.ts";
import { FOLDING_VERSION } from "../domain/search/fold.ts";
import type { Marker } from "../domain/search/narrowing.ts";
import type { IndexCondition, IndexedNote, SearchIndex } from "./meilisearch.ts";
import { upsertChecked } from "./worker.ts";

const BATCH = 2000;
const LEASE_SECONDS = 120;
/** Notes are sent again from this long before the oldest transaction open when the copy began. */
const RESEND_MARGIN_SECONDS = 300;

export class RebuildRunning extends Error {}
/** The rebuild's lease lapsed or was taken over: it stops, another may be rebuilding. */
export class RebuildLeaseLost extends Error {}

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

/**
 * Writes a position into the new index's marker as a worker's batch does, then the generation
 * and that position into PostgreSQL, by the lease's holder only.
 */
async function completeRebuild(db: Db, index: SearchIndex, marker: Marker, owner: string): Promise<void> {
  await db.$executeRaw`UPDATE search_index_state SET position = position + 1 WHERE index_name = ${index.name}`;
  const sent = await db.$transaction(
    async (tx) => {
      const [state] = await tx.$queryRaw<{ position: bigint; owner: string | null }[]>`
        SELECT position, rebuild_owner AS owner FROM search_index_state WHERE index_name = ${index.name} FOR UPDATE`;
      if (state.owner !== owner)
        throw new RebuildLeaseLost(`the rebuild of the search index "${index.name}" lost its lease: stopped`);
      return { position: state.position, wait: await index.markPosition(Number(state.position)) };
    },
    { timeout: 30_000 },
  );
  await sent.wait();
  const written = await db.$executeRaw`
    UPDATE search_index_state
    SET generation = ${marker.generation}, folding = ${marker.folding}, built_at = now(),
        confirmed = greatest(confirmed, ${sent.position}), pending_generation = NULL, stale_generation = NULL,
        rebuild_index = NULL
    WHERE index_name = ${index.name} AND rebuild_owner = ${owner}`;
  if (written !== 1)
    throw new RebuildLeaseLost(`the rebuild of the search index "${index.name}" lost its lease: stopped`);
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
  // Renewed every quarter of the lease; once a renewal finds the lease gone (or it lapsed
  // unrenewed), every later step throws.
  let heldUntil = Date.now() + LEASE_SECONDS * 1000;
  let lost = false;
  const renewLease = async () => {
    const since = Date.now();
    if (lost) return;
    if (await claimLease(db, index.name, owner)) heldUntil = since + LEASE_SECONDS * 1000;
    else lost = true;
  };
  const hold = () => {
    if (lost || Date.now() >= heldUntil)
      throw new RebuildLeaseLost(`the rebuild of the search index "${index.name}" lost its lease: stopped`);
  };
  const renew = setInterval(() => void renewLease().catch(() => {}), (LEASE_SECONDS * 1000) / 4);
  try {
    const leftover = await db.searchIndexState.findUnique({ where: { indexName: index.name } });
    // A killed rebuild's fresh index: nothing else deletes it, and no rebuild but this one runs.
    if (leftover?.rebuildIndex) await index.dropIndex(leftover.rebuildIndex);
    await db.searchRebuildRemove.deleteMany({ where: { indexName: index.name } });
    const from = await resendFrom(db);
    const marker: Marker = { generation: randomUUID(), folding: FOLDING_VERSION };
    await db.searchIndexState.update({
      where: { indexName: index.name },
      data: { pendingGeneration: marker.generation, rebuildIndex: null },
    });
    let notes = 0;
    await index.rebuild(notesByBatch(db), marker, {
      fresh: async (uid) => {
        hold();
        await db.searchIndexState.update({ where: { indexName: index.name }, data: { rebuildIndex: uid } });
      },
      onBatch: (done) => {
        hold();
        notes = done;
        return onBatch?.(done);
      },
      beforeSwap: async () => {
        await renewLease();
        hold();
      },
    });
    let resent = 0;
    for await (const batch of notesByBatch(db, { createdAt: { gte: from } })) {
      hold();
      await upsertChecked(db, index, batch);
      resent += batch.length;
    }
    // Removed from the old index while the copy ran: removed from the new one too.
    for (;;) {
      hold();
      const removed = await db.searchRebuildRemove.findMany({
        where: { indexName: index.name },
        take: BATCH,
        select: { targetId: true },
      });
      if (removed.length === 0) break;
      const ids = removed.map((r) => r.targetId);
      await index.remove(ids);
      await db.searchRebuildRemove.deleteMany({ where: { indexName: index.name, targetId: { in: ids } } });
    }
    await completeRebuild(db, index, marker, owner);
    // Rows set aside as refused get another chance against the fresh index.
    await db.$executeRaw`
      UPDATE search_outbox SET attempts = 0, refusals = 0, next_attempt_at = now() WHERE next_attempt_at = 'infinity'`;
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
      /** The index still narrows searches (the outbox's waiting notes are joined to its hits). */
      narrows?: boolean;
      /** The index is stale (a restored index or database): searches leave it out until rebuilt. */
      stale?: boolean;
    };

/** What PostgreSQL holds of an index beyond its marker (search_index_state, the outbox). */
export interface StoredState {
  /** A rebuild's generation from before its swap until it completes. */
  pendingGeneration?: string | null;
  /** The generation held when the index was found stale. */
  staleGeneration?: string | null;
  /** Outbox positions: the last the marker is known to hold (read before the index), the last handed out (after). */
  confirmed?: bigint;
  position?: bigint;
  /** Outbox rows set aside as refused by Meilisearch. */
  setAside?: number;
}

export function completeness(
  condition: IndexCondition,
  stored: Marker | undefined,
  state: StoredState = {},
): Completeness {
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
      if (marker.generation !== stored?.generation || marker.folding !== stored.folding) {
        if (marker.generation === state.pendingGeneration)
          return incomplete("a rebuild swapped this index in and stopped before it completed", "rebuild");
        if (marker.generation === state.staleGeneration)
          return incomplete("the index was found stale (restored from an earlier state)", "rebuild");
        return incomplete(
          "the index and the database name different rebuilds (another database's index, or a restored one); run `npm run cli -- search reindex`",
          "operator",
        );
      }
      // Normal operation keeps confirmed <= the marker's position <= position (src/search/worker.ts).
      const at = BigInt(marker.position ?? 0);
      if (state.confirmed !== undefined && at < state.confirmed)
        return {
          ...incomplete(
            `the index lacks changes the database applied to it (outbox position ${at}, confirmed ${state.confirmed}: a Meilisearch restored from a snapshot or dump)`,
            "rebuild",
          ),
          stale: true,
        };
      if (state.position !== undefined && at > state.position)
        return {
          ...incomplete(
            `the index holds changes the database never made (outbox position ${at}, the database's ${state.position}: a PostgreSQL restored to an earlier point)`,
            "rebuild",
          ),
          stale: true,
        };
      if (condition.wrongSettings.length)
        return incomplete(
          `the index's settings differ from Murmur's: ${condition.wrongSettings.join(", ")}`,
          "settings",
        );
      if (state.setAside)
        return {
          ...incomplete(
            `${state.setAside} outbox rows were refused by Meilisearch and set aside (their notes are searched through PostgreSQL while at most 1,000 wait); run \`npm run cli -- search reindex\` to retry them`,
            "operator",
          ),
          narrows: true,
        };
      return { complete: true };
    }
  }
}

/**
 * The index's completeness, read now from both sides. An index found stale is left out of
 * searches at once (PostgreSQL's generation is cleared, kept as stale so that it is rebuilt).
 */
export async function searchIndexCompleteness(db: Db, index: SearchIndex): Promise<Completeness> {
  const read = () =>
    db.$queryRaw<
      {
        generation: string | null;
        folding: number | null;
        pending: string | null;
        stale: string | null;
        confirmed: bigint;
        position: bigint;
        set_aside: number;
      }[]
    >`
      SELECT s.generation, s.folding, s.pending_generation AS pending, s.stale_generation AS stale,
        coalesce(s.confirmed, 0) AS confirmed, coalesce(s.position, 0) AS position,
        (SELECT count(*)::int FROM search_outbox WHERE next_attempt_at = 'infinity') AS set_aside
      FROM (SELECT) AS one LEFT JOIN search_index_state s ON s.index_name = ${index.name}`;
  // Read around the index's marker: confirmed only grows and is confirmed after the marker holds
  // it, position is handed out before the marker holds it, so neither order can look broken.
  const [before] = await read();
  const condition = await index.condition();
  const [after] = await read();
  const stored =
    before.generation && before.folding !== null
      ? { generation: before.generation, folding: before.folding }
      : undefined;
  const found = completeness(condition, stored, {
    pendingGeneration: after.pending,
    staleGeneration: after.stale,
    confirmed: before.confirmed,
    position: after.position,
    setAside: after.set_aside,
  });
  if (!found.complete && found.stale && stored)
    await db.$executeRaw`
      UPDATE search_index_state SET stale_generation = generation, generation = NULL
      WHERE index_name = ${index.name} AND generation = ${stored.generation}`;
  return found;
}
