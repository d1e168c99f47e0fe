// Configuration from the environment (docs/running.md#configuration), parsed and validated once.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import path from "node:path";
import { z } from "zod";
import { parseSigningKey } from "./domain/sessions/tokens.ts";

/**
 * The installation's folder (this file is src/config.ts, or dist/config.js once compiled). The
 * default DATA_DIR is under it wherever the server or the CLI is started from: a default relative
 * to the current folder made a new, empty cluster wherever `murmur` happened to run.
 */
export const INSTALL_DIR = path.resolve(import.meta.dirname, "..");

const CAPTCHA_PROVIDERS = ["dev", "turnstile", "hcaptcha", "recaptcha"] as const;
export type CaptchaProvider = (typeof CAPTCHA_PROVIDERS)[number];

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v));

function isUrl(v: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(v).protocol);
  } catch {
    return false;
  }
}

const url = (protocols: string[]) =>
  optionalString.refine((v) => v === undefined || isUrl(v, protocols), `must be a URL (${protocols.join(" or ")})`);

/** URLs separated by commas. */
const urls = (protocols: string[]) =>
  optionalString.refine(
    (v) => v === undefined || v.split(",").every((one) => isUrl(one.trim(), protocols)),
    `must be URLs (${protocols.join(" or ")}) separated by commas`,
  );

const integer = (min: number, max: number, fallback: number) =>
  optionalString
    .transform((v) => (v === undefined ? fallback : Number(v)))
    .refine((n) => Number.isInteger(n) && n >= min && n <= max, `must be a whole number from ${min} to ${max}`);

/** proxy-addr's names for address ranges, which Fastify's trustProxy also takes. */
const PROXY_RANGES = ["loopback", "linklocal", "uniquelocal"];

/** One entry of a TRUST_PROXY list: an address, a CIDR, or one of proxy-addr's range names. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (!family || rest.length) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

/**
 * Fastify's trustProxy: off (unset, `false`), every proxy (`true`), a hop count, or the proxies
 * trusted by address (CIDRs, addresses, `loopback`, separated by commas).
 */
const trustProxy = optionalString
  .transform((v): boolean | number | string[] | undefined => {
    if (v === undefined || v === "false") return false;
    if (v === "true") return true;
    if (/^\d+$/.test(v)) return Number(v);
    const entries = v.split(",").map((entry) => entry.trim());
    return entries.every(isProxyAddress) ? entries : undefined;
  })
  .refine(
    (v) => v !== undefined && (typeof v !== "number" || v <= 100),
    "must be true, false, a number of hops (0 to 100), or addresses and CIDRs separated by commas",
  )
  .transform((v) => v as boolean | number | string[]);

const env = z.object({
  NODE_ENV: optionalString,
  PORT: integer(0, 65535, 3000),
  HOST: optionalString.transform((v) => v ?? "127.0.0.1"),
  // Unset: follows PORT (below).
  PUBLIC_URL: url(["http:", "https:"]).transform((v) => v?.replace(/\/+$/, "")),
  // Given: relative to the current folder, as any path on a command line. Unset: <install>/data.
  DATA_DIR: optionalString.transform((v) => (v === undefined ? path.join(INSTALL_DIR, "data") : path.resolve(v))),
  DATABASE_URL: url(["postgres:", "postgresql:"]),
  // docs/fleet.md#read-replicas: read replicas, separated by commas.
  DATABASE_REPLICA_URL: urls(["postgres:", "postgresql:"]),
  SMTP_URL: url(["smtp:", "smtps:"]),
  MAIL_FROM: optionalString,
  // Extension: the wait before a failed mail's first retry, doubled each time up to an hour.
  MAIL_RETRY_MS: integer(10, 3_600_000, 60_000),
  CAPTCHA_PROVIDER: optionalString.refine(
    (v) => v === undefined || (CAPTCHA_PROVIDERS as readonly string[]).includes(v),
    `must be one of ${CAPTCHA_PROVIDERS.join(", ")}`,
  ),
  CAPTCHA_SECRET: optionalString,
  // Extension: the siteverify endpoint, for a provider reached through a proxy.
  CAPTCHA_VERIFY_URL: url(["http:", "https:"]),
  MEILI_URL: url(["http:", "https:"]),
  MEILI_KEY: optionalString,
  // Extension: the index name, so several instances or test runs can share one Meilisearch.
  MEILI_INDEX: optionalString.refine(
    (v) => v === undefined || /^[A-Za-z0-9_-]{1,100}$/.test(v),
    "must be an index name",
  ),
  STORAGE_DIR: optionalString,
  // docs/fleet.md#object-storage: an S3-compatible bucket instead of STORAGE_DIR.
  S3_BUCKET: optionalString,
  S3_ENDPOINT: url(["http:", "https:"]),
  S3_REGION: optionalString,
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  S3_FORCE_PATH_STYLE: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v === "true"),
  // Extension: rate-limit counters in Redis, shared by every instance behind one load balancer.
  REDIS_URL: url(["redis:", "rediss:"]),
  // Extension: which proxies in front may say who the client is (X-Forwarded-For).
  TRUST_PROXY: trustProxy,
  RATE_LIMIT_MULTIPLIER: optionalString
    .transform((v) => (v === undefined ? 1 : Number(v)))
    .refine((n) => Number.isFinite(n) && n >= 0, "must be a number, 0 or more"),
  TOKEN_SIGNING_KEY: optionalString.refine((v) => {
    if (v === undefined) return true;
    try {
      parseSigningKey(v);
      return true;
    } catch {
      return false;
    }
  }, "must be an Ed25519 private key (PKCS#8 PEM) or its 32-byte seed in base64"),
  // Extension: GET /metrics only for `Authorization: Bearer <METRICS_TOKEN>`; unset: for anyone.
  METRICS_TOKEN: optionalString.refine(
    (v) => v === undefined || /^[\x21-\x7e]{16,}$/.test(v),
    "must be 16 or more printable characters, no spaces",
  ),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .optional()
    .transform((v) => v ?? "info"),
  // Extensions: bcrypt cost, and the snowflake worker id for running several instances.
  BCRYPT_COST: integer(4, 15, 11),
  // Extension: requests in flight past which the server answers 503 instead of queueing more.
  MAX_IN_FLIGHT: integer(1, 100_000, 512),
  // Extension: rows an account deletion removes per transaction (docs/accounts.md#deletion).
  ACCOUNT_DELETION_BATCH: integer(1, 100_000, 1000),
  // Extension: how long an instance that stopped renewing its lease counts as alive: its
  // unanswered Idempotency-Key claims are free again after it (src/db/instance-lease.ts).
  INSTANCE_LEASE_SECONDS: integer(1, 3600, 30),
  // Extension: how long a leased snowflake worker id lasts unrenewed (src/db/worker-lease.ts).
  WORKER_LEASE_SECONDS: integer(1, 3600, 60),
  // `*` (any origin) or origins separated by commas, each scheme://host[:port].
  CORS_ORIGINS: optionalString.refine(
    (v) =>
      v === undefined || v.trim() === "*" || v.split(",").every((origin) => /^https?:\/\/[^/\s]+$/.test(origin.trim())),
    "must be * or origins (scheme://host[:port]) separated by commas",
  ),
  // Extensions: slow clients. A request must arrive whole within REQUEST_TIMEOUT_MS (long enough
  // for a 100 MB upload at 1 MB/s), its headers within HEADERS_TIMEOUT_MS; past either the
  // connection is answered 408 and closed.
  REQUEST_TIMEOUT_MS: integer(100, 3_600_000, 120_000),
  HEADERS_TIMEOUT_MS: integer(100, 3_600_000, 10_000),
  // docs/federation.md#instance: ActivityPub on (default) or off; fetching private addresses.
  FEDERATION: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v !== "false"),
  FEDERATION_ALLOW_PRIVATE: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v === "true"),
  // docs/running.md#federation-worker: off, this process only enqueues (a `murmur worker` delivers);
  // thread, a worker thread of this process works the queue.
  FEDERATION_QUEUE: z.enum(["on", "off", "thread"]).optional().default("on"),
  // docs/federation.md#delivery: the first retry's wait (doubling to an hour), and how long a
  // server that keeps failing is skipped before it is tried again.
  FEDERATION_RETRY_MS: integer(10, 3_600_000, 1_000),
  FEDERATION_PAUSE_MS: integer(100, 86_400_000, 1_800_000),
  // docs/running.md: how long a queue worker's claim of a message lasts unrenewed, so how long
  // what a dead process held waits before another takes it.
  FEDERATION_QUEUE_LEASE_MS: integer(1_000, 3_600_000, 30_000),
  // docs/federation.md#signatures: inbox POSTs taken from one server a minute (across a fleet),
  // and fetches (keys, JSON-LD contexts) the checking of one server's POSTs may cost a minute (and
  // contexts fetched from one host).
  FEDERATION_INBOX_RATE: integer(1, 10_000_000, 3_000),
  FEDERATION_INBOX_FETCH_RATE: integer(1, 1_000_000, 60),
  // docs/federation.md#delivery: deliveries to one server at once, per process.
  FEDERATION_HOST_CONCURRENCY: integer(1, 1_000, 2),
  // docs/live.md#fan-out: the least time between two reads of the live journal by one instance.
  LIVE_READ_SPACING_MS: integer(0, 1_000, 80),
  // docs/live.md#fan-out: stream writes a second past which reads are spaced further, within the
  // budget; no budget (0, the default) spaces them by LIVE_READ_SPACING_MS alone.
  LIVE_WRITES_PER_SECOND: integer(1, 10_000_000, 25_000),
  LIVE_READ_BUDGET_MS: integer(0, 10_000, 0),
  // docs/live.md#process: live streams served by a child process, at this niceness when allowed.
  STREAMS_PROCESS: z.enum(["on", "off"]).optional().default("on"),
  STREAMS_PROCESS_NICE: integer(-20, 19, -15),
  // Unset: leased from the database at start (src/db/worker-lease.ts).
  WORKER_ID: optionalString
    .transform((v) => (v === undefined ? undefined : Number(v)))
    .refine(
      (n) => n === undefined || (Number.isInteger(n) && n >= 0 && n <= 1023),
      "must be a whole number from 0 to 1023",
    ),
});

export interface Config {
  production: boolean;
  port: number;
  host: string;
  publicUrl: string;
  /** `<host>` of qualified names `@name@<host>`. */
  localHost: string;
  dataDir: string;
  databaseUrl?: string;
  /** Read replicas of databaseUrl (docs/fleet.md#read-replicas); empty: none. */
  databaseReplicaUrls: string[];
  smtpUrl?: string;
  mailFrom: string;
  /** Wait before a failed mail's first retry (src/mail/queue.ts). */
  mailRetryMs: number;
  captcha: { provider: CaptchaProvider; secret?: string; verifyUrl?: string };
  meili?: { url: string; key?: string; index?: string };
  storageDir: string;
  /** An S3-compatible bucket for files, instead of storageDir (docs/fleet.md#object-storage). */
  s3?: {
    bucket: string;
    endpoint?: string;
    region: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    forcePathStyle: boolean;
  };
  rateLimitMultiplier: number;
  /**
   * Fastify's trustProxy: whose X-Forwarded-For names the client that request.ip (rate limits,
   * idempotency keys, captcha checks, logs) is.
   */
  trustProxy: boolean | number | string[];
  redisUrl?: string;
  tokenSigningKey?: string;
  /** The bearer token GET /metrics asks for; undefined: none. */
  metricsToken?: string;
  logLevel: string;
  bcryptCost: number;
  /**
   * The snowflake worker id; undefined: one is leased from the database (docs/fleet.md#worker-ids).
   */
  workerId?: number;
  maxInFlight: number;
  /** Rows of each kind an account deletion removes per transaction. */
  accountDeletionBatch: number;
  /** Seconds an instance's lease lasts unrenewed (src/db/instance-lease.ts). */
  instanceLeaseSeconds: number;
  /** Seconds a leased worker id lasts unrenewed (src/db/worker-lease.ts). */
  workerLeaseSeconds: number;
  /** Origins browsers may call from; undefined: any. */
  corsOrigins?: string[];
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  /** ActivityPub (docs/federation.md#instance); off, the server answers as before. */
  federation: boolean;
  /** Whether federation may fetch private, loopback and link-local addresses (tests, local setups). */
  federationAllowPrivate: boolean;
  /**
   * Who works the federation queue (delivers, handles what was received): this process's own
   * thread (on), a worker thread of it (thread), or another process (off: this one only enqueues).
   */
  federationQueue: "on" | "off" | "thread";
  /** The first wait before a failed delivery is tried again; doubled each time, up to an hour. */
  federationRetryMs: number;
  /** How long a server that keeps failing is skipped before one delivery tries it again. */
  federationPauseMs: number;
  federationQueueLeaseMs: number;
  /** Inbox POSTs taken from one server a minute, across the fleet (429 past it). */
  federationInboxRate: number;
  /** Fetches (keys, contexts) the checking of one server's inbox POSTs may cost a minute, per process. */
  federationInboxFetchRate: number;
  /** Deliveries to one server at once, per process. */
  federationHostConcurrency: number;
  /** The least time between two reads of the live journal: a burst's events go out in fewer writes. */
  liveReadSpacingMs: number;
  /** Stream writes a second that the live journal's reads make before they are spaced further apart. */
  liveWritesPerSecond: number;
  /** How far apart they may be spaced for it and the last read have taken, together. */
  liveReadBudgetMs: number;
  /** Whether live streams are handed to a child process of their own. */
  streamsProcess: boolean;
  /** Its niceness (lower: sooner on a busy CPU), where the system allows it. */
  streamsProcessNice: number;
}

export class ConfigError extends Error {}

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const parsed = env.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`invalid configuration: ${String(issue.path[0])} ${issue.message}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === "production";
  if (production && e.CAPTCHA_PROVIDER === undefined) {
    throw new ConfigError("invalid configuration: CAPTCHA_PROVIDER must be set when NODE_ENV=production");
  }
  const provider = (e.CAPTCHA_PROVIDER ?? "dev") as CaptchaProvider;
  if (provider !== "dev" && !e.CAPTCHA_SECRET) {
    throw new ConfigError(`invalid configuration: CAPTCHA_SECRET is required with CAPTCHA_PROVIDER=${provider}`);
  }
  if (e.DATABASE_REPLICA_URL && !e.DATABASE_URL) {
    throw new ConfigError("invalid configuration: DATABASE_REPLICA_URL needs DATABASE_URL (replicas of that database)");
  }
  if (e.FEDERATION_QUEUE === "thread" && e.WORKER_ID !== undefined) {
    // The thread mints ids too, so it leases a worker id of its own (docs/fleet.md#worker-ids).
    throw new ConfigError("invalid configuration: FEDERATION_QUEUE=thread needs WORKER_ID unset");
  }
  const publicUrlText = e.PUBLIC_URL ?? `http://localhost:${e.PORT}`;
  const publicUrl = new URL(publicUrlText);
  return {
    production,
    port: e.PORT,
    host: e.HOST,
    publicUrl: publicUrlText,
    localHost: publicUrl.host,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databaseReplicaUrls: e.DATABASE_REPLICA_URL?.split(",").map((one) => one.trim()) ?? [],
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM ?? `Murmur <noreply@${publicUrl.hostname}>`,
    mailRetryMs: e.MAIL_RETRY_MS,
    captcha: { provider, secret: e.CAPTCHA_SECRET, verifyUrl: e.CAPTCHA_VERIFY_URL },
    meili: e.MEILI_URL ? { url: e.MEILI_URL, key: e.MEILI_KEY, index: e.MEILI_INDEX } : undefined,
    storageDir: path.resolve(e.STORAGE_DIR ?? path.join(e.DATA_DIR, "files")),
    s3: e.S3_BUCKET
      ? {
          bucket: e.S3_BUCKET,
          endpoint: e.S3_ENDPOINT,
          region: e.S3_REGION ?? "us-east-1",
          accessKeyId: e.S3_ACCESS_KEY_ID,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY,
          forcePathStyle: e.S3_FORCE_PATH_STYLE,
        }
      : undefined,
    rateLimitMultiplier: e.RATE_LIMIT_MULTIPLIER,
    trustProxy: e.TRUST_PROXY,
    redisUrl: e.REDIS_URL,
    tokenSigningKey: e.TOKEN_SIGNING_KEY,
    metricsToken: e.METRICS_TOKEN,
    logLevel: e.LOG_LEVEL,
    bcryptCost: e.BCRYPT_COST,
    workerId: e.WORKER_ID,
    maxInFlight: e.MAX_IN_FLIGHT,
    accountDeletionBatch: e.ACCOUNT_DELETION_BATCH,
    instanceLeaseSeconds: e.INSTANCE_LEASE_SECONDS,
    workerLeaseSeconds: e.WORKER_LEASE_SECONDS,
    corsOrigins:
      e.CORS_ORIGINS === undefined || e.CORS_ORIGINS.trim() === "*"
        ? undefined
        : e.CORS_ORIGINS.split(",").map((origin) => origin.trim()),
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    headersTimeoutMs: Math.min(e.HEADERS_TIMEOUT_MS, e.REQUEST_TIMEOUT_MS),
    federation: e.FEDERATION,
    federationAllowPrivate: e.FEDERATION_ALLOW_PRIVATE,
    federationQueue: e.FEDERATION_QUEUE,
    federationRetryMs: e.FEDERATION_RETRY_MS,
    federationPauseMs: e.FEDERATION_PAUSE_MS,
    federationQueueLeaseMs: e.FEDERATION_QUEUE_LEASE_MS,
    federationInboxRate: e.FEDERATION_INBOX_RATE,
    federationInboxFetchRate: e.FEDERATION_INBOX_FETCH_RATE,
    federationHostConcurrency: e.FEDERATION_HOST_CONCURRENCY,
    liveReadSpacingMs: e.LIVE_READ_SPACING_MS,
    liveWritesPerSecond: e.LIVE_WRITES_PER_SECOND,
    liveReadBudgetMs: e.LIVE_READ_BUDGET_MS,
    streamsProcess: e.STREAMS_PROCESS === "on",
    streamsProcessNice: e.STREAMS_PROCESS_NICE,
  };
}

/**
 * What loadConfig cannot tell alone: that HOST names an address this machine resolves. Run at
 * start before anything else, so that a bad HOST is one line, not a stack trace after the
 * database started.
 */
export async function checkConfig(config: Pick<Config, "host">): Promise<void> {
  if (isIP(config.host)) return;
  try {
    await lookup(config.host);
  } catch (err) {
    const code = (err as { code?: string }).code ?? String(err);
    throw new ConfigError(`invalid configuration: HOST ${config.host} does not resolve (${code})`);
  }
}
