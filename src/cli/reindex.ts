// `search reindex`: rebuilds the Meilisearch index from PostgreSQL into a fresh index, swapped in
// when complete, so searches are never blocked. Outbox rows older than the rebuild are dropped:
// the rebuild read their notes as they are now. (Notes deleted meanwhile may linger in the index
// as extra candidates; PostgreSQL's exact filter leaves them out.)
import { SingleBar } from "cli-progress";
import type { Services } from "../domain/context.ts";
import type { IndexedNote } from "../search/meilisearch.ts";

const BATCH = 2000;

async function* notesByBatch(services: Services): AsyncGenerator<IndexedNote[]> {
  let after = -1n;
  for (;;) {
    const batch = await services.db.note.findMany({
      where: { id: { gt: after } },
      orderBy: { id: "asc" },
      take: BATCH,
      select: { id: true, content: true, cwComment: true },
    });
    if (batch.length === 0) return;
    after = batch[batch.length - 1].id;
    yield batch;
  }
}

export async function reindexSearch(services: Services): Promise<void> {
  if (!services.search) {
    console.log("MEILI_URL is not set: search runs on PostgreSQL, whose indexes need no rebuild.");
    return;
  }
  const started = await services.db.$queryRaw<{ now: Date }[]>`SELECT now()`;
  const total = await services.db.note.count();
  const bar = new SingleBar({ format: "reindex [{bar}] {percentage}% | {value}/{total} notes | {eta_formatted} left" });
  bar.start(total, 0);
  await services.search.rebuild(notesByBatch(services), (done) => bar.update(Math.min(done, total)));
  bar.stop();
  // Notes written while the copy ran may have reached only the old index: send them again.
  const since = await services.db.note.findMany({
    where: { createdAt: { gte: started[0].now } },
    select: { id: true, content: true, cwComment: true },
  });
  await services.search.upsert(since);
  const { count } = await services.db.searchOutbox.deleteMany({ where: { createdAt: { lt: started[0].now } } });
  console.log(`reindexed ${total} notes; ${count} pending updates were covered by the rebuild`);
}
