// Murmur's federation on its Fastify app, when FEDERATION is on (docs/federation.md#instance).
import type { FastifyInstance } from "fastify";
import { JSON_BODY_LIMIT } from "../http/limits.ts";
import type { AppServices } from "../services.ts";
import { mountFedify } from "./fastify.ts";
import { createMurmurFederation, PATHS } from "./federation.ts";

export async function mountFederation(app: FastifyInstance, services: AppServices): Promise<void> {
  const federation = createMurmurFederation(services);
  await mountFedify(app, federation, {
    origin: services.config.publicUrl,
    contextData: services,
    inboxes: [PATHS.inbox, PATHS.sharedInbox],
    // An activity is JSON: the bound of every JSON body.
    bodyLimit: JSON_BODY_LIMIT,
  });
}
