// Health (CONTRACT 1): whether the process serves, and whether what it needs answers. With
// Meilisearch, readiness also says whether the index narrows searches, and what to do when not.
import { z } from "zod";
import type { Services } from "../../domain/context.ts";
import { DomainError } from "../../domain/errors.ts";
import { rebuildRunning, searchIndexCompleteness } from "../../search/rebuild.ts";
import { route } from "../route.ts";

const SearchReadiness = z.strictObject({
  index: z
    .enum(["complete", "incomplete", "rebuilding"])
    .describe("complete: Meilisearch narrows searches; otherwise PostgreSQL answers them alone"),
  detail: z.string().optional().describe("why the index is not used, and what the operator should do"),
});
type SearchReadiness = z.infer<typeof SearchReadiness>;

const Checks = z
  .strictObject({ database: z.literal("up"), storage: z.literal("up") })
  .describe("each dependency that answered: the database, and the file store (its folder, or its bucket)");
type Readiness = { checks: z.infer<typeof Checks>; search?: SearchReadiness };

/** Undefined when something needed does not answer (503). */
async function readiness(services: Services): Promise<Readiness | undefined> {
  try {
    await services.db.$queryRaw`SELECT 1`;
    // A key never written: any answer (no) means the store answers; an error that it does not.
    await services.storage.exists("readyz-probe");
    const checks = { database: "up", storage: "up" } as const;
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
    summary: "The database, the file store, and Meilisearch when configured, answer (503 otherwise)",
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
];
