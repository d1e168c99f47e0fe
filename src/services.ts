// Builds the services every operation shares, and releases them.
import path from "node:path";
import type { Logger } from "pino";
import { createCaptchaVerifier } from "./captcha.ts";
import type { Config } from "./config.ts";
import { createDb } from "./db/client.ts";
import { instanceLease, newInstanceId, withSessionName } from "./db/instance-lease.ts";
import { createReadRouting } from "./db/replicas.ts";
import { SnowflakeGenerator } from "./db/snowflake.ts";
import { leaseWorkerId, type WorkerLease } from "./db/worker-lease.ts";
import type { Services } from "./domain/context.ts";
import { InstancePolicies } from "./domain/instances/policies.ts";
import { LiveHub } from "./domain/live/hub.ts";
import { CallerCache, callerReader, readCallers } from "./domain/sessions/caller-cache.ts";
import { TokenIssuer } from "./domain/sessions/tokens.ts";
import { keysMade } from "./federation/keys.ts";
import type { StreamsProcess } from "./http/streams-process.ts";
import { createMailer } from "./mail/mailer.ts";
import { MailWorker } from "./mail/queue.ts";
import { Metrics } from "./metrics.ts";
import { createMeilisearchIndex, type SearchIndex } from "./search/meilisearch.ts";
import { createLocalStorage } from "./storage/local.ts";
import type { Storage } from "./storage/storage.ts";

/**
 * What one process runs: the domain's services as the classes behind them, with what only the
 * process and its edges use.
 */
export interface AppServices extends Services {
  /** The policies' table and the connection that keeps it true. */
  instances: InstancePolicies;
  /** This instance's live streams (docs/live.md#fan-out); the contexts of requests carry it to openStream. */
  live?: LiveHub;
  /** The process this one hands its streams to, when it has one (src/http/streams-process.ts). */
  streams?: StreamsProcess;
  /** Sends the mail queue (src/mail/queue.ts); the domain queues mail with queueMail in its transactions. */
  mail: MailWorker;
  /** Meilisearch, when MEILI_URL is set: also prepared, written and rebuilt, by its worker and the CLI. */
  search?: SearchIndex;
  /** What GET /metrics reports of this instance. */
  metrics: Metrics;
  /** The primary's URL, for what keeps connections of its own (federation's store and queue). */
  databaseUrl: string;
}

// Redis (ioredis) and S3 (the AWS SDK) are loaded only when configured: resident memory an
// instance without them does not spend.
/** `scraped`: false for a process whose /metrics nobody reads (the streams' process). */
export async function createServices(
  config: Config,
  databaseUrl: string,
  log: Logger,
  { scraped = true } = {},
): Promise<AppServices> {
  const instanceId = newInstanceId();
  // Writes made here are forgotten at once; the database announces them, and others', a moment later.
  const db = createDb(withSessionName(databaseUrl, instanceId), (id) => callers.forget(id));
  // A deleted account has no callers: its tokens are INVALID_TOKEN on every instance.
  const callers = new CallerCache(
    databaseUrl,
    callerReader((ids) => readCallers(db, ids)),
    log,
  );
  callers.listen();
  const instances = new InstancePolicies(databaseUrl, db, log);
  instances.listen();
  const redis = config.redisUrl ? (await import("./redis.ts")).createRedis(config.redisUrl, log) : undefined;
  const workerLease =
    config.workerId === undefined ? await leaseWorkerId(db, log, config.workerLeaseSeconds) : undefined;
  const metrics = new Metrics({
    db,
    log,
    liveStreams: () => (services.live?.open ?? 0) + (services.streams?.open ?? 0),
    processMetrics: scraped,
  });
  const services: AppServices = {
    config,
    db,
    redis,
    replicas: config.databaseReplicaUrls.length
      ? createReadRouting(db, config.databaseReplicaUrls, redis, log)
      : undefined,
    callers,
    instances,
    ids: new SnowflakeGenerator(config.workerId ?? (workerLease as WorkerLease).current),
    workerLease,
    instance: instanceLease(db, log, instanceId, config.instanceLeaseSeconds),
    tokens: await TokenIssuer.create(config.tokenSigningKey),
    mail: new MailWorker({
      db,
      mailer: createMailer({
        smtpUrl: config.smtpUrl,
        from: config.mailFrom,
        outboxDir: path.join(config.dataDir, "outbox"),
        log,
      }),
      log,
      retryMs: config.mailRetryMs,
      metrics: () => metrics,
    }),
    captcha: createCaptchaVerifier(config.captcha),
    storage: await createStorage(config),
    search: config.meili ? createMeilisearchIndex(config.meili) : undefined,
    log,
    metrics,
    databaseUrl,
  };
  services.live = new LiveHub(services, databaseUrl);
  return services;
}

/** Where uploaded files are kept: S3_BUCKET, else STORAGE_DIR. */
export async function createStorage(config: Config): Promise<Storage> {
  if (!config.s3) return createLocalStorage(config.storageDir);
  const { createS3Storage, s3ScratchDir } = await import("./storage/s3.ts");
  return createS3Storage({ ...config.s3, scratchDir: s3ScratchDir(config.dataDir) });
}

export async function closeServices(services: AppServices): Promise<void> {
  await services.live?.close();
  await services.mail.stop();
  await services.callers.close();
  await services.instances.close();
  // Keys a registration asked for are made on this database (a CLI's create exits right after).
  await keysMade();
  await services.workerLease?.release().catch((err) => services.log.warn({ err }, "worker id lease not given back"));
  await services.instance.release().catch((err) => services.log.warn({ err }, "instance lease not given back"));
  if (services.replicas) {
    const { primary, replica } = services.replicas.counts;
    services.log.info({ primary, replica }, "reads that may lag: where they went");
    await services.replicas.close();
  }
  services.redis?.disconnect();
  await services.db.$disconnect();
}
