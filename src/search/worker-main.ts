// `npm run worker`: the search outbox worker on its own, for running it apart from the server.
import { ConfigError, loadConfig } from "../config.ts";
import { startDatabase } from "../db/database.ts";
import { createLogger } from "../log.ts";
import { closeServices, createServices } from "../services.ts";
import { startSearchSync } from "./sync.ts";

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
}
const log = createLogger(config.logLevel);
if (!config.meili) {
  console.error("MEILI_URL is not set: search runs on PostgreSQL alone and there is nothing to sync");
  process.exit(1);
}
const database = await startDatabase(config, (message) => log.info(message));
const services = await createServices(config, database.url, log);
const sync = startSearchSync(services.db, services.search!, log);
log.info("search worker started");
const stop = async () => {
  await sync.stop();
  await closeServices(services);
  await database.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
