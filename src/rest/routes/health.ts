// Health (CONTRACT 1): whether the process serves, and whether what it needs answers.
import { z } from "zod";
import type { Services } from "../../domain/context.ts";
import { DomainError } from "../../domain/errors.ts";
import { route } from "../route.ts";

async function readiness(services: Services): Promise<boolean> {
  try {
    await services.db.$queryRaw`SELECT 1`;
    return services.search ? await services.search.healthy() : true;
  } catch {
    return false;
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
    summary: "The database, and Meilisearch when configured, answer (503 otherwise)",
    tag: "health",
    auth: "none",
    rateLimit: "none",
    success: { status: 200, description: "ready", schema: z.strictObject({ status: z.literal("ready") }) },
    errors: [],
    run: async (ctx) => {
      if (!(await readiness(ctx))) throw new DomainError("SERVICE_UNAVAILABLE");
    },
    reply: () => ({ status: 200, body: { status: "ready" } }),
  }),
];
