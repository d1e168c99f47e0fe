// Keeping Meilisearch true, in the server (or `npm run worker`): prepare the index (version,
// key, settings read back), retrying until it holds; rebuild it when it is missing, was folded
// by older code, was swapped in by a rebuild that stopped before completing, or was found stale
// (restored: src/search/rebuild.ts, completeness), one instance of a fleet under the rebuild
// lease; then drain the outbox. Every
// minute the index is checked again (settings changed behind its back are applied again), and
// whenever the answer changes the log says whether the index narrows searches and, when it does
// not, why and what the operator should do.
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import type { SearchIndex } from "./meilisearch.ts";
import { RebuildRunning, rebuildSearchIndex, searchIndexCompleteness } from "./rebuild.ts";
import { SearchWorker, type SearchWorkerMetrics } from "./worker.ts";

const RETRY_MS = [1000, 2000, 5000, 10_000, 30_000];
const CHECK_MS = 60_000;

export interface SearchSync {
  stop(): Promise<void>;
}

export function startSearchSync(db: Db, index: SearchIndex, log: Logger, metrics?: SearchWorkerMetrics): SearchSync {
  const worker = new SearchWorker(db, index, log, metrics);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let lastSaid = "";
  let rebuilding: Promise<unknown> | undefined;
  const later = (ms: number, run: () => Promise<void>) => {
    if (!stopped) timer = setTimeout(() => void run(), ms);
  };

  const check = async () => {
    try {
      const found = await searchIndexCompleteness(db, index);
      const said = found.complete ? "complete" : found.reason;
      if (said !== lastSaid) {
        if (found.complete) log.info(`search index "${index.name}" is complete: Meilisearch narrows searches`);
        else if (found.narrows) log.warn(`search index "${index.name}" is not complete: ${found.reason}`);
        else log.warn(`search index "${index.name}" is not used, PostgreSQL answers searches alone: ${found.reason}`);
        lastSaid = said;
      }
      if (!found.complete && found.fix === "settings") {
        await index.prepare();
        return later(0, check);
      }
      if (!found.complete && found.fix === "rebuild" && !rebuilding) {
        // Checked again in a minute whatever happened: never a loop of rebuilds (searches compare
        // the markers themselves, so they use the index the moment it is complete).
        rebuilding = rebuildSearchIndex(db, index).then(
          (report) => {
            log.info(report, `search index "${index.name}" rebuilt`);
            rebuilding = undefined;
            later(CHECK_MS, check);
          },
          (err) => {
            if (err instanceof RebuildRunning) log.info(err.message);
            else log.error({ err }, "search index rebuild failed; will try again");
            rebuilding = undefined;
            later(CHECK_MS, check);
          },
        );
        return;
      }
    } catch (err) {
      log.warn({ err }, "search index condition unknown");
    }
    later(CHECK_MS, check);
  };

  const prepare = async (attempt: number) => {
    try {
      await index.prepare();
    } catch (err) {
      log.warn({ err }, "Meilisearch not ready; searching PostgreSQL alone, will try again");
      later(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)], () => prepare(attempt + 1));
      return;
    }
    if (stopped) return;
    worker.start();
    await check();
  };
  void prepare(0);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      // A rebuild under way is left to end with the process: its lease lapses for another to retry.
      await worker.stop();
    },
  };
}
