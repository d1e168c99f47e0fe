// Murmur's federation on its Fastify app, when FEDERATION is on (docs/federation.md#instance).
import type { FastifyInstance } from "fastify";
import { JSON_BODY_LIMIT } from "../http/limits.ts";
import type { AppServices } from "../services.ts";
import { mountFedify } from "./fastify.ts";
import { createMurmurFederation, PATHS } from "./federation.ts";
import { PostgresKvStore } from "./kv-store.ts";
import { PostgresMessageQueue } from "./message-queue.ts";
import { remoteAccounts } from "./remote-accounts.ts";

export async function mountFederation(app: FastifyInstance, services: AppServices): Promise<void> {
  // In PostgreSQL, so that every instance of a fleet shares Fedify's caches, idempotence records
  // and queue; each with a small pool of its own, opened on first use.
  const kv = new PostgresKvStore(services.databaseUrl);
  const queue = new PostgresMessageQueue({ databaseUrl: services.databaseUrl, log: services.log });
  const federation = createMurmurFederation(services, { kv, queue });
  // What the domain asks of federation (remote names, deliveries), through this federation.
  services.federation = remoteAccounts(federation, services);
  const stop = new AbortController();
  const worked = federation.startQueue(services, { signal: stop.signal });
  app.addHook("onClose", async () => {
    stop.abort();
    await worked;
    await queue.close();
    await kv.close();
  });
  await mountFedify(app, federation, {
    origin: services.config.publicUrl,
    contextData: services,
    inboxes: [PATHS.inbox, PATHS.sharedInbox],
    // An activity is JSON: the bound of every JSON body.
    bodyLimit: JSON_BODY_LIMIT,
  });
}
