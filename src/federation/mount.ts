// Murmur's federation on its Fastify app, when FEDERATION is on (docs/federation.md#instance), and
// the queue worker a `murmur worker` process runs alone (docs/running.md#federation-worker).
import type { Federation } from "@fedify/fedify";
import type { FastifyInstance } from "fastify";
import { JSON_BODY_LIMIT } from "../http/limits.ts";
import type { AppServices } from "../services.ts";
import { mountFedify } from "./fastify.ts";
import { createMurmurFederation, type FederationData, PATHS } from "./federation.ts";
import { socialActivity, socialActs } from "./follows.ts";
import { inboxGate } from "./inbox-gate.ts";
import { guardInboxes } from "./inbox-receive.ts";
import { PostgresKvStore } from "./kv-store.ts";
import { PostgresMessageQueue } from "./message-queue.ts";
import { isNoteKind, noteActivity, noteUris } from "./notes.ts";
import { type OutboxActivity, OutboxRelay } from "./outbox.ts";
import { isProfileKind, profileActivity } from "./profile.ts";
import { startQueueThread } from "./queue-thread.ts";
import { isReactionKind, reactionActivity, reactionUris } from "./reactions.ts";
import { remoteAccounts } from "./remote-accounts.ts";
import { forwardActivity, isForwardKind } from "./report-flag.ts";
import { SenderFetchBudget } from "./sender-fetches.ts";

export interface OpenFederation {
  federation: Federation<FederationData>;
  /**
   * Stops relaying the outbox and working the queue (what runs finishes first), then closes the
   * store and queue.
   */
  close(): Promise<void>;
}

/**
 * Fedify's federation on PostgreSQL, so that every instance of a fleet shares Fedify's caches,
 * idempotence records and queue (each with a small pool of its own, opened on first use). With
 * `work`, this process relays the federation outbox into the queue (src/federation/outbox.ts),
 * delivers what is queued and handles what was received; without, it only writes the outbox and
 * enqueues, and some other process of the fleet does the rest.
 */
export function openFederation(services: AppServices, work: boolean): OpenFederation {
  const kv = new PostgresKvStore(services.databaseUrl);
  // Its expired entries deleted by the processes that work the queue (which writes most of them).
  if (work) kv.startSweeping();
  const queue = new PostgresMessageQueue({
    databaseUrl: services.databaseUrl,
    log: services.log,
    leaseMs: services.config.federationQueueLeaseMs,
    // 4 at once while requests keep the event loop busy (the POSTs of received activities among
    // them); received activities up to 16 while it has time to spare. Deliveries stay at 4: more
    // did not end a fan-out sooner, each server taking a few at a time (bench/README.md, "Intake,
    // 2026-11-28: more handlers while the loop is idle").
    concurrency: 4,
    spareConcurrency: 16,
    spareFor: (message) => (message as { type?: unknown } | null)?.type === "inbox",
  });
  // Inbox POSTs: their fetches bounded per sender, garbage refused (src/federation/inbox-receive.ts).
  const federation = guardInboxes(
    createMurmurFederation(services, { kv, queue }),
    new SenderFetchBudget(services.config.federationInboxFetchRate),
    kv,
  );
  // What the domain asks of federation (remote names, deliveries), through this federation.
  services.federation = {
    ...remoteAccounts(federation, services),
    ...socialActs(federation, services),
    ...noteUris(federation, services),
    ...reactionUris(federation, services),
  };
  const stop = new AbortController();
  // Fedify's automatic start gives listen no signal: started here, with one.
  const worked = work ? federation.startQueue(services, { signal: stop.signal }) : Promise.resolve();
  const activityOf: OutboxActivity = (ctx, row) =>
    isNoteKind(row.kind)
      ? noteActivity(ctx, row)
      : isReactionKind(row.kind)
        ? reactionActivity(ctx, row)
        : isProfileKind(row.kind)
          ? profileActivity(ctx, row)
          : isForwardKind(row.kind)
            ? forwardActivity(ctx, row)
            : socialActivity(ctx, row);
  const relay = work ? new OutboxRelay(federation, services, activityOf) : undefined;
  relay?.start();
  return {
    federation,
    async close() {
      await relay?.stop();
      stop.abort();
      await worked;
      await queue.close();
      await kv.close();
    },
  };
}

export async function mountFederation(app: FastifyInstance, services: AppServices): Promise<void> {
  const mode = services.config.federationQueue;
  const { federation, close } = openFederation(services, mode === "on");
  // Worked by a thread of this process (src/federation/queue-thread.ts), stopped before the rest.
  const thread = mode === "thread" ? startQueueThread(services) : undefined;
  app.addHook("onClose", async () => {
    await thread?.close();
    await close();
  });
  await mountFedify(app, federation, {
    origin: services.config.publicUrl,
    contextData: services,
    inboxes: [PATHS.inbox, PATHS.sharedInbox],
    // An activity is JSON: the bound of every JSON body.
    bodyLimit: JSON_BODY_LIMIT,
    admit: inboxGate(services, JSON_BODY_LIMIT),
  });
}
