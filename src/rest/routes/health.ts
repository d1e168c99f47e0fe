// Health (CONTRACT 1): whether the process serves, and whether what it needs answers. With
// Meilisearch, readiness also says whether the index narrows searches, and what to do when not.
import { z } from "zod";
import { MAX_LAG_SECONDS } from "../../db/replicas.ts";
import type { Services } from "../../domain/context.ts";
import { DomainError } from "../../domain/errors.ts";
import { METRICS_CONTENT_TYPE, scrapeMetrics } from "../../metrics.ts";
import { rebuildRunning, searchIndexCompleteness } from "../../search/rebuild.ts";
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
  })
  .describe(
    "each dependency: the database and the file store (its folder, or its bucket) answered; " +
      "Redis and read replicas, whose outage this instance serves through, as they are",
  );
type Checks = z.infer<typeof Checks>;
type Readiness = { checks: Checks; search?: SearchReadiness };

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

/** Undefined when something needed does not answer (503). */
async function readiness(services: Services): Promise<Readiness | undefined> {
  try {
    await services.db.$queryRaw`SELECT 1`;
    // A key never written: any answer (no) means the store answers; an error that it does not.
    await services.storage.exists("readyz-probe");
    const checks: Checks = { database: "up", storage: "up", ...(await degradable(services)) };
    if (!services.search) return { checks };
    const found = await searchIndexCompleteness(services.db, services.search);
    const ready = (search: SearchReadiness) => ({ checks, search });
    if (found.complete) return ready({ index: "complete" });
    if (!found.answers) return undefined;
    if (await rebuildRunning(services.db, services.search.name))
      return ready({ index: "rebuilding", detail: `${found.reason}; a rebuild is under way` });
    const action = {
      rebuild: "; an instance rebuilds it by itself",
      settings: "; an instance applies them again",
      operator: "",
    };
    return ready({ index: "incomplete", detail: found.reason + action[found.fix] });
  } catch {
    return undefined;
  }
}

export const healthRoutes = [
  route({
    method: "GET",
    path: "/healthz",
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
    summary:
      "The database, the file store, and Meilisearch when configured, answer (503 otherwise); Redis and replicas as they are",
    tag: "health",
    auth: "none",
    rateLimit: "none",
    success: {
      status: 200,
      description: "ready; with Meilisearch, whether its index is used",
      schema: z.strictObject({ status: z.literal("ready"), checks: Checks, search: SearchReadiness.optional() }),
    },
    errors: [],
    run: async (ctx) => {
      const ready = await readiness(ctx);
      if (!ready) throw new DomainError("SERVICE_UNAVAILABLE");
      return ready;
    },
    reply: (ready) => ({ status: 200, body: { status: "ready", ...ready } }),
  }),
  route({
    method: "GET",
    path: "/metrics",
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
        "<METRICS_TOKEN>` (401 otherwise); it is no account's token",
      text: METRICS_CONTENT_TYPE,
    },
    // With METRICS_TOKEN set, only for `Authorization: Bearer <METRICS_TOKEN>`.
    errors: ["UNAUTHORIZED", "INVALID_TOKEN"],
    overrides: { INVALID_TOKEN: 401 },
    run: (ctx, { headers }) => scrapeMetrics(ctx, headers.authorization),
    reply: (text) => ({ status: 200, body: text, headers: { "content-type": METRICS_CONTENT_TYPE } }),
  }),
];
