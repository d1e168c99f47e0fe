// The federation queue's worker thread (src/federation/queue-thread.ts): works the queue with
// services of its own until its parent posts STOP, then lets the handlers running finish, closes
// what it opened and ends. What it counts for GET /metrics (deliveries, inbox activities handled)
// goes to the server's thread, which answers it.
import { parentPort, workerData } from "node:worker_threads";
import { createLogger } from "../log.ts";
import { closeServices, createServices } from "../services.ts";
import { openFederation } from "./mount.ts";
import { type CountedInThread, type QueueThreadData, STOP } from "./queue-thread.ts";

const { config, databaseUrl } = workerData as QueueThreadData;
const log = createLogger(config.logLevel).child({ thread: "federation-queue" });
const services = await createServices(config, databaseUrl, log);
const counted = (message: CountedInThread) => parentPort?.postMessage(message);
services.metrics.delivery = (...args) => counted({ counted: "delivery", args });
services.metrics.inboxActivity = (...args) => counted({ counted: "inboxActivity", args });
const { close } = openFederation(services, true);
parentPort?.on("message", async (message) => {
  if (message !== STOP) return;
  await close();
  await closeServices(services);
  process.exit(0);
});
