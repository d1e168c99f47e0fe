// `npm run worker`: the search outbox worker on its own, for running it apart from the server.
// It first waits for Meilisearch, one log line an attempt (a worker started before Meilisearch,
// as a compose file may, must not crash), then starts the database and drains the outbox; an
// outage after that is the sync's to ride out, as in the server.
import { ConfigError, checkConfig, loadConfig } from "../config.ts";
import { startDatabase } from "../db/database.ts";
import { createLogger } from "../log.ts";
import { closeServices, createServices } from "../services.ts";
import { createMeilisearchIndex } from "./meilisearch.ts";
import { startSearchSync } from "./sync.ts";

/** Seconds between attempts to reach Meilisearch: growing, then every 30 s. */
const RETRY_SECONDS = [1, 2, 5, 10, 30];

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
  await checkConfig(config);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
}
const log = createLogger(config.logLevel);
const meili = config.meili;
if (!meili) {
  console.error("MEILI_URL is not set: search runs on PostgreSQL alone and there is nothing to sync");
  process.exit(1);
}

let stopping: (() => Promise<void>) | undefined;
const stop = () => {
  if (!stopping) process.exit(0); // still waiting for Meilisearch: nothing to close
  void stopping();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

/** What went wrong, in one line: the network error under a failed request, else the message. */
function reason(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  const code = (cause as { code?: unknown }).code;
  const message = cause instanceof Error ? cause.message : String(cause);
  return (typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message).split("\n")[0];
}

const index = createMeilisearchIndex(meili);
for (let attempt = 1; ; attempt++) {
  try {
    await index.prepare();
    break;
  } catch (err) {
    const seconds = RETRY_SECONDS[Math.min(attempt - 1, RETRY_SECONDS.length - 1)];
    log.warn(
      `Meilisearch at ${meili.url} not ready (attempt ${attempt}): ${reason(err)}; trying again in ${seconds} s`,
    );
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  }
}
log.info(`Meilisearch at ${meili.url} answers`);

const database = await startDatabase(config, (message) => log.info(message));
const services = await createServices(config, database.url, log);
const sync = startSearchSync(services.db, services.search!, log, services.metrics);
log.info("search worker started");
stopping = async () => {
  await sync.stop();
  await closeServices(services);
  await database.stop();
  process.exit(0);
};
