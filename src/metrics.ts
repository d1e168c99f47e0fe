// What an operator's Prometheus scrapes from GET /metrics (prom-client): requests by route
// pattern and status, with their latency; the database pool; the event loop and the process
// (prom-client's default metrics); the search outbox's backlog; the mail queue; live streams;
// rate-limit refusals; federation's queues, deliveries and inbox activities.
// One registry per instance of the server, so that several in one process (the tests) keep apart.
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { Config } from "./config.ts";
import { type Db, poolUse } from "./db/client.ts";
import { DomainError } from "./domain/errors.ts";
import { DELIVERY_OUTCOMES, type DeliveryOutcome } from "./federation/hosts.ts";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The inboxes' routes (src/federation/federation.ts's PATHS, as Fastify names them). */
const INBOX_ROUTES = new Set(["/inbox", "/accounts/:identifier/inbox"]);

/** Fedify's queued messages by kind, and the federation outbox (src/federation/outbox.ts) before them. */
const FEDERATION_QUEUES = ["inbox", "outbox", "fanout", "federation_outbox"] as const;

export class Metrics {
  readonly registry = new Registry();
  private readonly answers = new AnswerMeter(this.registry);
  private readonly refusals = new Counter({
    name: "murmur_rate_limit_refusals_total",
    help: "Requests refused 429 RATE_LIMITED, by limit (general, login, register, upload)",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });

  private readonly compiledPages = new Counter({
    name: "murmur_graphql_compiled_pages_total",
    help: "GraphQL timeline pages of a document with a compiled plan, by what answered them: the plan, or the executor (a refusal or failure)",
    labelNames: ["answered_by"] as const,
    registers: [this.registry],
  });

  private readonly searchIndexQueries = new Counter({
    name: "murmur_search_index_queries_total",
    help: "Searches by what the Meilisearch index did for them (with MEILI_URL): narrowed, too_many, unusable, failed, circuit_open, not_asked",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  private readonly searchOutages = new Counter({
    name: "murmur_search_index_update_failures_total",
    help: "Search outbox batches this instance could not apply (Meilisearch down, refusing its key, out of disk, or the database): each is retried whole with backoff, nothing is set aside",
    registers: [this.registry],
  });

  private readonly mailSends = new Counter({
    name: "murmur_mail_sent_total",
    help: "Mails this instance sent (over SMTP, or written to the outbox folder)",
    registers: [this.registry],
  });
  private readonly mailFailures = new Counter({
    name: "murmur_mail_failed_total",
    help: "Attempts to send a mail that failed on this instance (each is retried until the mail is given up)",
    registers: [this.registry],
  });
  private readonly mailGiveUps = new Counter({
    name: "murmur_mail_given_up_total",
    help: "Mails this instance gave up on: not sent in the day since they were queued",
    registers: [this.registry],
  });

  private readonly deliveries = new Counter({
    name: "murmur_federation_deliveries_total",
    help: "Deliveries of an activity to a remote inbox this instance handled, by outcome: delivered, retried (queued again after a failure), permanent_failure (404 or 410), held (its server is paused), dropped (given up)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  private readonly inboxActivities = new Counter({
    name: "murmur_federation_inbox_activities_total",
    help: "Activities at this instance's inboxes, by type and result: accepted (queued), handled, retried, rejected (a copy already handled, no actor, a failure), abandoned, refused (with reason: unsigned, bad_signature, key_not_fetched, blocked, rate_limited; the type of a refused one is unknown)",
    labelNames: ["type", "result", "reason"] as const,
    registers: [this.registry],
  });

  /**
   * `liveStreams`: how many are open now, read at each scrape (the hub is built after the metrics).
   * `processMetrics`: prom-client's (its event-loop delay monitor wakes the process 100 times a
   * second, 0.7% of a core idle), not for a process nobody scrapes.
   */
  constructor(services: { db: Db; log: Logger; liveStreams: () => number; processMetrics?: boolean }) {
    const db: Db = services.db;
    if (services.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const pool = (name: string, help: string, read: (use: NonNullable<ReturnType<typeof poolUse>>) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          const use = poolUse(db);
          if (use) this.set(read(use));
        },
      });
    pool("murmur_db_pool_connections", "Connections the database pool holds", (use) => use.total);
    pool("murmur_db_pool_idle", "Connections of the pool not in use", (use) => use.idle);
    pool("murmur_db_pool_waiting", "Queries waiting for a connection of the pool", (use) => use.waiting);
    new Gauge({
      name: "murmur_live_streams_open",
      help: "Live streams (SSE, GraphQL subscriptions) open on this instance",
      registers: [this.registry],
      collect() {
        this.set(services.liveStreams());
      },
    });
    // One query for both, at scrape time; a database out of reach leaves them out of the scrape.
    let outbox: Promise<{ backlog: number; oldest: number } | undefined> | undefined;
    const readOutbox = () => {
      outbox ??= db.$queryRaw<{ backlog: number; oldest: number | null }[]>`
          SELECT count(*)::int AS backlog,
                 coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
          FROM search_outbox`
        .then(([row]) => ({ backlog: row.backlog, oldest: row.oldest ?? 0 }))
        .catch((err) => {
          services.log.warn({ err }, "search outbox not measured");
          return undefined;
        })
        .finally(() => {
          setImmediate(() => {
            outbox = undefined;
          });
        });
      return outbox;
    };
    new Gauge({
      name: "murmur_search_outbox_backlog",
      help: "Changes the search index has yet to learn (Meilisearch only)",
      registers: [this.registry],
      async collect() {
        const found = await readOutbox();
        if (found) this.set(found.backlog);
        else this.reset();
      },
    });
    new Gauge({
      name: "murmur_search_outbox_oldest_seconds",
      help: "Age of the oldest change the search index has yet to learn; 0 when none",
      registers: [this.registry],
      async collect() {
        const found = await readOutbox();
        if (found) this.set(found.oldest);
        else this.reset();
      },
    });
    // Federation's queues, read as the search outbox is: one query for all, at scrape time. A
    // delivery tried again is a message queued anew; its age is from its first attempt.
    let federationQueues: Promise<Map<string, { depth: number; oldest: number }> | undefined> | undefined;
    const readFederationQueues = () => {
      federationQueues ??= db.$queryRaw<{ kind: string; depth: number; oldest: number | null }[]>`
          SELECT message->>'type' AS kind, count(*)::int AS depth,
                 extract(epoch FROM now() - min(CASE
                   WHEN message->>'started' ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$' THEN (message->>'started')::timestamptz
                   ELSE created_at END))::float8 AS oldest
          FROM federation_messages GROUP BY 1
          UNION ALL
          SELECT 'federation_outbox', count(*)::int, extract(epoch FROM now() - min(created_at))::float8
          FROM federation_outbox`
        .then(
          (rows) => new Map(rows.map((row) => [row.kind, { depth: row.depth, oldest: Math.max(0, row.oldest ?? 0) }])),
        )
        .catch((err) => {
          services.log.warn({ err }, "federation queues not measured");
          return undefined;
        })
        .finally(() => {
          setImmediate(() => {
            federationQueues = undefined;
          });
        });
      return federationQueues;
    };
    new Gauge({
      name: "murmur_federation_queue_depth",
      help: "Federation messages waiting or being handled, by kind: inbox (received activities), outbox (deliveries to one inbox), fanout (an activity to spread over its inboxes), federation_outbox (acts not yet queued)",
      labelNames: ["kind"] as const,
      registers: [this.registry],
      async collect() {
        const found = await readFederationQueues();
        this.reset();
        if (found) for (const kind of FEDERATION_QUEUES) this.set({ kind }, found.get(kind)?.depth ?? 0);
      },
    });
    new Gauge({
      name: "murmur_federation_queue_oldest_seconds",
      help: "Age of the oldest federation message of a kind (a delivery's from its first attempt); 0 when none",
      labelNames: ["kind"] as const,
      registers: [this.registry],
      async collect() {
        const found = await readFederationQueues();
        this.reset();
        if (found) for (const kind of FEDERATION_QUEUES) this.set({ kind }, found.get(kind)?.oldest ?? 0);
      },
    });
    for (const outcome of DELIVERY_OUTCOMES) this.deliveries.inc({ outcome }, 0);
    // The mail queue, read as the search outbox is: one query for both, at scrape time.
    let mail: Promise<{ queued: number; oldest: number } | undefined> | undefined;
    const readMail = () => {
      mail ??= db.$queryRaw<{ queued: number; oldest: number | null }[]>`
          SELECT count(*)::int AS queued,
                 coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
          FROM mail_outbox`
        .then(([row]) => ({ queued: row.queued, oldest: row.oldest ?? 0 }))
        .catch((err) => {
          services.log.warn({ err }, "mail queue not measured");
          return undefined;
        })
        .finally(() => {
          setImmediate(() => {
            mail = undefined;
          });
        });
      return mail;
    };
    new Gauge({
      name: "murmur_mail_queued",
      help: "Mails waiting to be sent by the fleet, those being retried included",
      registers: [this.registry],
      async collect() {
        const found = await readMail();
        if (found) this.set(found.queued);
        else this.reset();
      },
    });
    new Gauge({
      name: "murmur_mail_oldest_seconds",
      help: "Age of the oldest mail waiting to be sent; 0 when none",
      registers: [this.registry],
      async collect() {
        const found = await readMail();
        if (found) this.set(found.oldest);
        else this.reset();
      },
    });
  }

  /** One delivery's outcome (src/federation/hosts.ts). */
  delivery(outcome: DeliveryOutcome): void {
    this.deliveries.inc({ outcome });
  }

  /** An inbox activity's fate (src/federation/meters.ts); `reason` is a refusal's. */
  inboxActivity(type: string, result: string, reason: string, count = 1): void {
    this.inboxActivities.inc({ type, result, reason }, count);
  }

  mailSent(): void {
    this.mailSends.inc();
  }

  mailFailed(): void {
    this.mailFailures.inc();
  }

  mailGivenUp(): void {
    this.mailGiveUps.inc();
  }

  /** An answered request, counted under its route's pattern (never its URL: ids would explode the labels). */
  answered(request: FastifyRequest, reply: FastifyReply): void {
    const route = routeOf(request.routeOptions.url);
    this.answers.record(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    // An inbox POST refused before its body is read (src/federation/inbox-gate.ts): Fedify never sees it.
    if (
      request.method === "POST" &&
      INBOX_ROUTES.has(route) &&
      (reply.statusCode === 403 || reply.statusCode === 429)
    ) {
      this.inboxActivity("unknown", "refused", reply.statusCode === 403 ? "blocked" : "rate_limited");
    }
  }

  refused(limit: string): void {
    this.refusals.inc({ limit });
  }

  /** A search's use of the Meilisearch index (src/domain/search/candidates.ts). */
  searchIndexQuery(outcome: string): void {
    this.searchIndexQueries.inc({ outcome });
  }

  /** A search outbox batch not applied: an outage, retried (src/search/worker.ts). */
  searchOutage(): void {
    this.searchOutages.inc();
  }

  /** A GraphQL page of a compiled document, answered by its plan or left to the executor. */
  compiledPage(answeredBy: "plan" | "executor"): void {
    this.compiledPages.inc({ answered_by: answeredBy });
  }
}

/**
 * The scrape, in Prometheus' text format. With METRICS_TOKEN set, only for `Bearer <token>`:
 * figures of traffic and load are not for everyone. In production, none without it: no token
 * would open it, so it is not there (404) rather than asking for one (401).
 */
export async function scrapeMetrics(services: { config: Config; metrics: Metrics }, authorization?: string) {
  const token = services.config.metricsToken;
  if (token === undefined && services.config.production) throw new DomainError("NOT_FOUND");
  if (token !== undefined) {
    const sent = Buffer.from(/^Bearer +(\S+)$/i.exec(authorization ?? "")?.[1] ?? "");
    const expected = Buffer.from(token);
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
      throw new DomainError(authorization ? "INVALID_TOKEN" : "UNAUTHORIZED", { credentials: true });
    }
  }
  return services.metrics.registry.metrics();
}

const routes = new Map<string | undefined, string>();

/** A route's pattern as the metrics name it: without /v0, "unmatched" for none. */
function routeOf(pattern: string | undefined): string {
  let route = routes.get(pattern);
  if (route === undefined) {
    route = pattern === undefined ? "unmatched" : pattern.replace(/^\/v0(?=\/|$)/, "") || "/";
    routes.set(pattern, route);
  }
  return route;
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The answers of one method, route pattern and status. */
interface Answers {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Answers by the first bucket they fit in (the last: past them all). */
  buckets: number[];
}

/**
 * Requests answered, by method, route pattern and status, with their durations: counted here, and
 * written at a scrape as prom-client's Counter and Histogram write theirs (the same names, labels
 * and buckets). prom-client built a string of the three labels, twice, for every answer.
 */
class AnswerMeter {
  /** By route, then method, then status: found without building a key. */
  private readonly answers = new Map<string, Map<string, Map<number, Answers>>>();

  constructor(registry: Registry) {
    const metric = (name: string, help: string, type: string, values: () => object[]) => ({
      name,
      help,
      type,
      aggregator: "sum",
      get: async () => ({ name, help, type, values: values(), aggregator: "sum" }),
      reset: () => this.answers.clear(),
    });
    const all = () => [...this.answers.values()].flatMap((m) => [...m.values()].flatMap((s) => [...s.values()]));
    const requests = "murmur_http_requests_total";
    const durations = "murmur_http_request_duration_seconds";
    // prom-client's registry takes any metric that gives its values so.
    registry.registerMetric(
      metric(requests, "Requests answered, by method, route pattern and status", "counter", () =>
        all().map((a) => ({ labels: a.labels, value: a.count })),
      ) as never,
    );
    registry.registerMetric(
      metric(
        durations,
        "Time from a request's arrival to its answer's end, by method, route pattern and status",
        "histogram",
        () =>
          all().flatMap((a) => {
            const cumulative: number[] = [];
            for (const [i, n] of a.buckets.entries()) cumulative.push((cumulative[i - 1] ?? 0) + n);
            const bucket = (le: number | string, value: number) => ({
              labels: { le },
              sharedLabels: a.labels,
              value,
              metricName: `${durations}_bucket`,
            });
            return [
              ...DURATION_BUCKETS.map((le, i) => bucket(le, cumulative[i])),
              bucket("+Inf", a.count),
              { labels: {}, sharedLabels: a.labels, value: a.sum, metricName: `${durations}_sum` },
              { labels: {}, sharedLabels: a.labels, value: a.count, metricName: `${durations}_count` },
            ];
          }),
      ) as never,
    );
  }

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.answers.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.answers.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let answers = byStatus.get(status);
    if (answers === undefined) {
      const labels = { method, route, status: String(status) };
      answers = { labels, count: 0, sum: 0, buckets: new Array(DURATION_BUCKETS.length + 1).fill(0) };
      byStatus.set(status, answers);
    }
    answers.count++;
    answers.sum += seconds;
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
    answers.buckets[bucket]++;
  }
}
