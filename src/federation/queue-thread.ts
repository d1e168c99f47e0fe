// FEDERATION_QUEUE=thread (docs/running.md#federation-worker): the federation queue worked by
// a worker thread of the server process, as a `murmur worker` process would work it, so that
// handling what other servers sent and delivering no longer share the event loop that answers
// requests (inbox POSTs among them). The thread has services of its own (src/services.ts: its own
// pools, and a snowflake worker id leased for it) and shares the work through the database, as a
// worker process does; only what it counts for GET /metrics is posted to the server's thread.
// Not the default: on two cores shared with PostgreSQL it stores more while the POSTs come, but
// answers them later, and costs a second heap (bench/README.md, "Intake, 2026-11-27 (fourth)").
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Config } from "../config.ts";
import type { Metrics } from "../metrics.ts";
import type { AppServices } from "../services.ts";

/** What the thread is started with (src/federation/queue-thread-main.ts). */
export interface QueueThreadData {
  config: Config;
  databaseUrl: string;
}

/** The message that stops the thread: it finishes what it handles, closes its services and ends. */
export const STOP = "stop";

/** What the thread counts, posted to the server's thread, whose Metrics GET /metrics reads. */
export type CountedInThread =
  | { counted: "delivery"; args: Parameters<Metrics["delivery"]> }
  | { counted: "inboxActivity"; args: Parameters<Metrics["inboxActivity"]> };

/** A thread that ended unasked is started again after this (an error is logged each time). */
const RESTART_MS = 5_000;

export interface QueueThread {
  /** Stops the thread (what it handles finishes first) and waits for its end. */
  close(): Promise<void>;
}

export function startQueueThread(services: AppServices): QueueThread {
  const { log } = services;
  // The entry beside this file, compiled (dist/, .js) or run through tsx (.ts, which the thread
  // can load only with tsx's loader, as its parent does).
  const extension = path.extname(fileURLToPath(import.meta.url));
  const entry = new URL(`./queue-thread-main${extension}`, import.meta.url);
  const execArgv =
    extension === ".ts" && !process.execArgv.some((arg) => arg.includes("tsx"))
      ? [...process.execArgv, "--import", "tsx"]
      : process.execArgv;
  const data: QueueThreadData = {
    // Its own snowflake worker id, leased: two threads minting ids with one worker id would
    // mint the same ids (config.ts refuses thread with WORKER_ID set).
    config: { ...services.config, workerId: undefined },
    databaseUrl: services.databaseUrl,
  };
  let stopping = false;
  let restart: NodeJS.Timeout | undefined;
  let worker: Worker | undefined;
  let ended: Promise<unknown> = Promise.resolve();
  const start = () => {
    restart = undefined;
    const thread = new Worker(entry, { workerData: data, execArgv });
    worker = thread;
    thread.on("message", (message: CountedInThread) => {
      if (message.counted === "delivery") services.metrics.delivery(...message.args);
      else if (message.counted === "inboxActivity") services.metrics.inboxActivity(...message.args);
    });
    // An error the thread did not catch ends it: said here, then it is started again.
    thread.on("error", (err) => log.error({ err }, "federation queue thread failed"));
    ended = once(thread, "exit").then(([code]) => {
      worker = undefined;
      if (stopping) return;
      log.error(`federation queue thread ended (code ${code}): started again in ${RESTART_MS / 1000} s`);
      restart = setTimeout(start, RESTART_MS);
    });
  };
  start();
  return {
    async close() {
      stopping = true;
      clearTimeout(restart);
      worker?.postMessage(STOP);
      await ended;
    },
  };
}
