// `search reindex`: rebuilds the Meilisearch index from PostgreSQL into a fresh index, swapped in
// when complete, so searches are never blocked (src/search/rebuild.ts says how no note is lost).
import { SingleBar } from "cli-progress";
import { rebuildSearchIndex } from "../search/rebuild.ts";
import type { AppServices } from "../services.ts";

export async function reindexSearch(services: AppServices): Promise<void> {
  if (!services.search) {
    console.log("MEILI_URL is not set: search runs on PostgreSQL, whose indexes need no rebuild.");
    return;
  }
  await services.search.prepare();
  const total = await services.db.note.count();
  const bar = new SingleBar({ format: "reindex [{bar}] {percentage}% | {value}/{total} notes | {eta_formatted} left" });
  bar.start(total, 0);
  let report: Awaited<ReturnType<typeof rebuildSearchIndex>>;
  try {
    report = await rebuildSearchIndex(services.db, services.search, (done) => bar.update(Math.min(done, total)));
  } finally {
    bar.stop();
  }
  console.log(`reindexed ${report.notes} notes (${report.resent} sent again for writes during the copy)`);
}
