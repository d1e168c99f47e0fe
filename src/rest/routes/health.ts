// Health (docs/running.md#health): whether the process serves, and whether what it needs answers.
// With Meilisearch, readiness also says whether the index narrows searches, and what to do when
// not.
import { z } from "zod";
import { MAX_LAG_SECONDS } from "../../db/replicas.ts";
import type { Services } from "../../domain/context.ts";
import { DomainError } from "../../domain/errors.ts";
import { databaseFolding } from "../../domain/search/fold.ts";
import { RepeatedFailure } from "../../log.ts";
import { METRICS_CONTENT_TYPE, scrapeMetrics } from "../../metrics.ts";
import { rebuildRunning, searchIndexCompleteness } from "../../search/rebuild.ts";
import type { AppServices } from "../../services.ts";
import { route } from "../route.ts";

const SearchReadiness = z.strictObject({
  index: z
    .enum(["complete", "incomplete", "rebuilding"])
    .describe("complete: Meilisearch narrows searches; otherwise PostgreSQL answers them alone"),
  detail: z.string().optional().describe("why the index is not used, and what the operator should do"),
});
type SearchReadiness = z.infer<typeof SearchReadiness>;

const Replica = z.strictObject({
  status: z
    .enum(["up", "behind", "down"])
    .describe(`behind: more than ${MAX_LAG_SECONDS} s of lag, or down: its reads go to the primary meanwhile`),
  lag_seconds: z.number().nullable().describe("replay lag behind the primary; null when it does not answer"),
});

const Checks = z
  .strictObject({
    database: z.literal("up"),
    storage: z.literal("up"),
    redis: z
      .enum(["up", "down"])
      .optional()
      .describe("with REDIS_URL; while down, rate limits are not counted and reads go to the primary"),
    replicas: z.array(Replica).optional().describe("with DATABASE_REPLICA_URL, in its order"),
    search: z
      .enum(["up", "down"])
      .optional()
      .describe("with MEILI_URL: whether Meilisearch answers; while down, PostgreSQL answers searches alone"),
  })
  .describe(
    "each dependency: the database and the file store (its folder, or its bucket) answered; " +
      "Redis, read replicas and Meilisearch, whose outage this instance serves through, as they are",
  );
type Checks = z.infer<typeof Checks>;
type Readiness = { checks: Checks; search?: SearchReadiness };

const Status = z.enum(["up", "down"]);
const NotReady = z.strictObject({
  error: z.literal("SERVICE_UNAVAILABLE"),
  checks: Checks.extend({
    database: Status,
    storage: Status.describe(
      "down: its folders (the upload scratch folder, STORAGE_DIR) cannot be written (a small file is created " +
        "and removed), or its bucket does not answer",
    ),
    ids: z
      .literal("down")
      .optional()
      .describe(
        "with WORKER_ID unset: no snowflake worker id is held (its lease could not be renewed in time, or was " +
          "taken over), so no ids are minted and writes answer 503; the instance leases one again by itself",
      ),
  })
    .optional()
    .describe("which needed dependency is down; absent when the instance refused the request as overloaded"),
});
type NotReady = z.infer<typeof NotReady>;

/** Dependencies the instance serves without, as they are now. */
async function degradable(services: Services): Promise<Pick<Checks, "redis" | "replicas">> {
  const checks: Pick<Checks, "redis" | "replicas"> = {};
  if (services.redis)
    checks.redis = await services.redis.ping().then(
      () => "up",
      () => "down",
    );
  if (services.replicas) {
    checks.replicas = services.replicas.health().map((r) => ({ status: r.status, lag_seconds: r.lagSeconds }));
  }
  return checks;
}

const unready = new WeakMap<Services["log"], RepeatedFailure>();

/**
 * Undefined when something needed does not answer (503). Why is logged once when it starts and
 * once when it ends: a load balancer asks every few seconds, each time a stack trace before.
 */
async function readiness(services: AppServices): Promise<Readiness | NotReady | undefined> {
  let said = unready.get(services.log);
  if (!said) {
    said = new RepeatedFailure(
      services.log,
      "not ready: the database or the file store does not answer, or no worker id is held",
    );
    unready.set(services.log, said);
  }
  try {
    const ready = await checkReadiness(services);
    if ("error" in ready) said.failed(ready.failure);
    else said.succeeded();
    return "error" in ready ? { error: ready.error, checks: ready.checks } : ready;
  } catch (err) {
    said.failed(err);
    return undefined;
  }
}

/** Ready, or which needed dependency is down and the first failure (for the log). */
async function checkReadiness(services: AppServices): Promise<Readiness | (NotReady & { failure: unknown })> {
  const failures: unknown[] = [];
  const check = (done: Promise<unknown>) =>
    done.then(
      () => "up" as const,
      (err) => {
        failures.push(err);
        return "down" as const;
      },
    );
  // Each needed dependency is asked, so that the answer names every one that is down.
  const [database, storage, others] = await Promise.all([
    check(services.db.$queryRaw`SELECT 1`),
    check(services.storage.check()),
    degradable(services),
  ]);
  const notReady = (checks: NonNullable<NotReady["checks"]>) => ({
    error: "SERVICE_UNAVAILABLE" as const,
    checks,
    failure: failures[0],
  });
  // Without a worker id no write can be made (src/db/worker-lease.ts).
  const ids = services.ids.available() ? {} : { ids: "down" as const };
  if (ids.ids) failures.push(new Error("no snowflake worker id is held: its lease could not be renewed"));
  if (database === "down" || storage === "down" || ids.ids) return notReady({ database, storage, ...others, ...ids });
  const checks: Checks = { database, storage, ...others };
  if (!services.search) return { checks };
  // Meilisearch is optional: while it is down searches go to PostgreSQL, so the instance stays
  // ready (a fleet taken out of service for it would answer nothing at all).
  const [found, folding] = await Promise.all([
    searchIndexCompleteness(services.db, services.search),
    databaseFolding(services.db),
  ]);
  checks.search = found.complete || found.answers ? "up" : "down";
  const ready = (search: SearchReadiness) => ({ checks, search });
  if (folding) return ready({ index: "incomplete", detail: folding });
  if (found.complete) return ready({ index: "complete" });
  if (!found.answers)
    return ready({ index: "incomplete", detail: `${found.reason}; PostgreSQL answers searches alone` });
  if (await rebuildRunning(services.db, services.search.name))
    return ready({ index: "rebuilding", detail: `${found.reason}; a rebuild is under way` });
  const action = {
    rebuild: "; an instance rebuilds it by itself",
    settings: "; an instance applies them again",
    operator: "",
  };
  return ready({ index: "incomplete", detail: found.reason + action[found.fix] });
}

export const healthRoutes = [
  route({
    method: "GET",
    path: "/healthz",
    operationId: "getHealth",
    summary: "The process serves",
    tag: "health",
    auth: "none",
    rateLimit: "none",
    success: { status: 200, description: "serving", schema: z.strictObject({ status: z.literal("ok") }) },
    errors: [],
    run: async () => undefined,
    reply: () => ({ status: 200, body: { status: "ok" } }),
  }),
  route({
    method: "GET",
    path: "/readyz",
    operationId: "getReadiness",
    summary:
      "The database and the file store answer, and ids can be minted (503 otherwise); " +
      "Redis, replicas and Meilisearch when configured as they are",
    tag: "health",
    auth: "none",
    rateLimit: "none",
    success: {
      status: 200,
      description: "ready; with Meilisearch, whether its index is used",
      schema: z.strictObject({ status: z.literal("ready"), checks: Checks, search: SearchReadiness.optional() }),
    },
    also: [{ status: 503, description: "not ready: `checks` names what is down", schema: NotReady }],
    errors: [],
    run: async (ctx) => {
      const ready = await readiness(ctx);
      if (!ready) throw new DomainError("SERVICE_UNAVAILABLE");
      return ready;
    },
    reply: (ready) =>
      "error" in ready
        ? // Retry-After as every 503 has it (http/errors.ts).
          { status: 503, body: ready, headers: { "retry-after": "1" } }
        : { status: 200, body: { status: "ready", ...ready } },
  }),
  route({
    method: "GET",
    path: "/metrics",
    operationId: "getMetrics",
    summary:
      "This instance's figures in Prometheus' text format: requests and latency by route and status, the database " +
      "pool, the event loop, the search outbox, live streams, rate-limit refusals",
    tag: "health",
    auth: "none",
    rateLimit: "none",
    success: {
      status: 200,
      description:
        "Prometheus text exposition format 0.0.4. With METRICS_TOKEN set, only for `Authorization: Bearer " +
        "<METRICS_TOKEN>` (401 otherwise); it is no account's token. With NODE_ENV=production and no " +
        "METRICS_TOKEN, 404 NOT_FOUND for everyone",
      text: METRICS_CONTENT_TYPE,
    },
    // With METRICS_TOKEN set, only for `Authorization: Bearer <METRICS_TOKEN>`; in production, never without it.
    errors: ["UNAUTHORIZED", "INVALID_TOKEN", "NOT_FOUND"],
    overrides: { INVALID_TOKEN: 401 },
    run: (ctx, { headers }) => scrapeMetrics(ctx, headers.authorization),
    reply: (text) => ({ status: 200, body: text, headers: { "content-type": METRICS_CONTENT_TYPE } }),
  }),
];
