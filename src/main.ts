// Starts Murmur: configuration, database (embedded unless DATABASE_URL) and migrations, then
// the server. SIGTERM/SIGINT: stop accepting, finish in-flight requests, close the database,
// stop the embedded PostgreSQL. Live streams are served by a child process of the same entry
// point (src/http/streams-process.ts), which this one starts and stops.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { type Config, ConfigError, checkConfig, loadConfig } from "./config.ts";
import { startDatabase } from "./db/database.ts";
import { DataFolderInUse, NoEmbeddedPostgres } from "./db/embedded-postgres.ts";
import { startDeletionWorker } from "./domain/accounts/deletion.ts";
import { startIdempotencySweep } from "./http/idempotency.ts";
import { STREAMS_CHILD_ENV, serveHandedStreams, startStreamsProcess } from "./http/streams-process.ts";
import { createLogger } from "./log.ts";
import { type SearchSync, startSearchSync } from "./search/sync.ts";
import { buildServer } from "./server.ts";
import { type AppServices, closeServices, createServices } from "./services.ts";

async function main(): Promise<void> {
  const started = performance.now();
  let config: Config;
  try {
    config = loadConfig();
    await checkConfig(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  if (process.env[STREAMS_CHILD_ENV] === "1") return serveStreams(config, log);
  // Without these lines the only sign is a client's 401 INVALID_TOKEN after a restart, or a 404.
  if (!config.tokenSigningKey) {
    log.warn(
      "TOKEN_SIGNING_KEY is unset: tokens are signed with a key made at this start, so every token dies when the " +
        "server restarts (clients get 401 INVALID_TOKEN and must log in again) and other instances refuse them; " +
        "set it (`openssl rand -base64 32`, the same on every instance)",
    );
    // Made here, not per process: the streams' process checks the same tokens.
    config = { ...config, tokenSigningKey: randomBytes(32).toString("base64") };
  }
  if (config.production && !config.metricsToken) {
    log.warn("GET /metrics answers 404: NODE_ENV=production and METRICS_TOKEN is unset (set it to scrape /metrics)");
  }
  let database: Awaited<ReturnType<typeof startDatabase>>;
  try {
    database = await startDatabase(config, (message) => log.info(message), {
      exclusive: true,
      // Said once: requests and /readyz answer 503 meanwhile, and the retrying jobs say it once each.
      onExit: (how) =>
        log.error(`the embedded PostgreSQL stopped (${how}): starting it again; requests get 503 meanwhile`),
      restart: {
        restarted: (attempt) => log.info(`the embedded PostgreSQL serves again (attempt ${attempt})`),
        // Nothing here will serve again: exit at once, so a supervisor restarts the whole, rather
        // than answer 503 (and /healthz 200) for ever.
        lost: (reason) => {
          log.fatal(`the embedded PostgreSQL could not be started again (${reason}): exiting`);
          process.exit(1);
        },
      },
    });
  } catch (err) {
    if (err instanceof DataFolderInUse || err instanceof NoEmbeddedPostgres) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const services = await createServices(config, database.url, log);
  const app = await buildServer(services);
  // With Meilisearch: its settings, its rebuild when needed, and the outbox worker (in this process).
  const searchSync: SearchSync | undefined =
    services.search && startSearchSync(services.db, services.search, log, services.metrics);
  // Account deletions left unfinished, by a request or by an instance that stopped
  // (docs/accounts.md#deletion).
  const deletions = startDeletionWorker(services);
  const idempotencySweep = startIdempotencySweep(services);
  // Queued mail, sent by every instance of a fleet (stopped by closeServices).
  services.mail.start(database.url);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal}: shutting down`);
    // Requests in flight get this long to finish; then the process ends all the same.
    setTimeout(() => {
      log.error("shutdown took too long: exiting");
      process.exit(1);
    }, 25_000).unref();
    try {
      await release();
    } catch (err) {
      log.error({ err }, "shutdown failed");
      process.exit(1);
    }
    process.exit(0);
  };
  const release = async () => {
    // Together: the server's close waits for the sockets it handed to the streams' process.
    await Promise.all([app.close(), services.streams?.stop()]);
    await searchSync?.stop();
    await deletions.stop();
    await idempotencySweep.stop();
    await closeServices(services);
    await database.stop();
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    const refusal = listenRefusal(err, config);
    if (!refusal) throw err;
    console.error(refusal);
    // The embedded PostgreSQL it started stops with it.
    await release().catch(() => {});
    process.exit(1);
  }
  // Once this one serves: a start refused (its port in use) starts none.
  if (config.streamsProcess) {
    services.streams = startStreamsProcess(streamsEnv(config, database.url), config.streamsProcessNice, log);
  }
  log.info(`Murmur listening on ${config.host}:${config.port} (${Math.round(performance.now() - started)} ms)`);
  const base = config.publicUrl.replace(/\/+$/, "");
  log.info(
    `REST reference ${base}/docs, GraphQL (GraphiQL in a browser) ${base}/graphql, OpenAPI ${base}/openapi.json`,
  );
}

/**
 * The streams' process: this one's configuration, on this one's database, with its signing key;
 * no federation queue worker and an id lease of its own (it mints no ids, but two processes must
 * never share one).
 */
function streamsEnv(config: Config, databaseUrl: string): NodeJS.ProcessEnv {
  const { WORKER_ID: _, ...env } = process.env;
  return { ...env, DATABASE_URL: databaseUrl, TOKEN_SIGNING_KEY: config.tokenSigningKey, FEDERATION_QUEUE: "off" };
}

/**
 * The streams' process (started by the one above): the same server, not listening, answering the
 * live streams' requests its parent hands it. It stops with its parent (SIGTERM, or the parent
 * gone); a terminal's SIGINT is its parent's to act on.
 */
async function serveStreams(config: Config, log: Logger) {
  // Its lines say whose they are: the two processes write to the same output.
  const own = log.child({ process: "streams" });
  const services: AppServices = await createServices(config, config.databaseUrl as string, own, { scraped: false });
  const app = await buildServer(services, { streamsOnly: true });
  await app.ready();
  const quiet = serveHandedStreams(app.server, () => services.live?.open ?? 0);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    quiet();
    await app.close();
    await closeServices(services);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("disconnect", () => void stop());
  process.on("SIGINT", () => {});
}

/** The one line that says why the port cannot be listened on, for the errors an operator fixes. */
function listenRefusal(err: unknown, config: { host: string; port: number }): string | undefined {
  const where = `port ${config.port} on ${config.host}`;
  switch ((err as NodeJS.ErrnoException).code) {
    case "EADDRINUSE":
      return `${where} is in use by another process: stop it, or set PORT to a free port`;
    case "EACCES":
      return `${where} may not be opened by this user (ports below 1024 need privileges): set PORT to 1024 or above`;
    case "EADDRNOTAVAIL":
      return `${where} cannot be listened on: ${config.host} is no address of this machine; set HOST`;
    default:
      return undefined;
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
