// `murmur worker` (docs/running.md#federation-worker): a process that works the federation queue
// alone, relaying the federation outbox into it (src/federation/outbox.ts), delivering what every
// server process of the fleet enqueued and handling what other servers sent, so that web
// processes started with FEDERATION_QUEUE=off only enqueue.
import { once } from "node:events";
import { openFederation } from "../federation/mount.ts";
import type { AppServices } from "../services.ts";

/** Works the queue until SIGTERM or SIGINT; then lets the handlers running finish and returns. */
export async function runFederationWorker(services: AppServices): Promise<void> {
  if (!services.config.federation) {
    throw new Error("FEDERATION=false: there is no federation queue to work");
  }
  const stopped = Promise.race([once(process, "SIGTERM"), once(process, "SIGINT")]);
  const { close } = openFederation(services, true);
  console.log("federation worker: working the queue (SIGTERM or SIGINT stops it)");
  await stopped;
  await close();
}
