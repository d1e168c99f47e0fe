// Deliveries to other servers (docs/federation.md#delivery), as Fedify makes them: an activity sent
// is enqueued once per recipient inbox in Murmur's PostgreSQL queue (src/federation/message-queue.ts),
// and a worker of the fleet POSTs it signed. What is Murmur's here is configuration and one gap:
// - how long a failing delivery is retried (Fedify's default gives up after 10 attempts, under an
//   hour in all), and that 404 and 410 stop it at once (Fedify's permanent failures);
// - how a server that keeps failing is paused: Fedify's circuit breaker, whose state is in the
//   key-value store (src/federation/kv-store.ts), so every process of a fleet counts the same
//   failures and skips the same servers;
// - the POST itself: Fedify sends it with the global fetch and offers no option to replace it, so a
//   delivery (a queued outbox or fanout message) runs in an async scope in which the global fetch is
//   safeFetch (src/federation/safe-fetch.ts), with Murmur's User-Agent. Outside such a scope the
//   global fetch is the one it was.
import { AsyncLocalStorage } from "node:async_hooks";
import type {
  CircuitBreakerOptions,
  Context,
  FederationOptions,
  MessageQueue,
  MessageQueueEnqueueOptions,
  MessageQueueListenOptions,
  RetryPolicy,
} from "@fedify/fedify";
import type { Activity, Recipient } from "@fedify/fedify/vocab";
import { type GetUserAgentOptions, getUserAgent } from "@fedify/vocab-runtime";
import { Temporal } from "@js-temporal/polyfill";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { policyIn } from "../domain/instances/policies.ts";
import type { AppServices } from "../services.ts";
import { HostSlots, type SlotOutcome } from "./host-slots.ts";
import type { DeliveryOutcome, DeliveryPost, DeliveryRecorder } from "./hosts.ts";
import { FETCH_LIMITS, safeFetch, UnsafeFetchError } from "./safe-fetch.ts";

/** A failed delivery is tried again until this long after its first attempt (docs/federation.md#delivery). */
export const RETRY_FOR_MS = 48 * 3_600_000;

/** The longest wait between two attempts: a server back after a day's outage hears within the hour. */
const MAX_RETRY_MS = 3_600_000;

/**
 * The wait before attempt `attempts + 1` of a delivery first tried `elapsedTime` ago: `firstMs`
 * doubled at each attempt up to an hour, plus up to half again at random (deliveries that failed
 * together do not all come back at once); none once 48 h have passed since the first attempt.
 * Fedify's exponential policy is not used: it stops after a count of attempts, and its delay
 * overflows Temporal's range after about 50 of them.
 */
export function deliveryRetryPolicy(firstMs: number, forMs = RETRY_FOR_MS): RetryPolicy {
  return ({ elapsedTime, attempts }) => {
    if (elapsedTime.total("millisecond") >= forMs) return null;
    const base = Math.min(MAX_RETRY_MS, firstMs * 2 ** Math.min(attempts, 32));
    return Temporal.Duration.from({ milliseconds: Math.round(base * (1 + Math.random() / 2)) });
  };
}

/** createFederation's options for delivery: retries, permanent failures, the pausing of failing servers. */
export function deliveryOptions(
  config: Pick<Config, "federationRetryMs" | "federationPauseMs">,
  log: Logger,
): Pick<
  FederationOptions<AppServices>,
  "outboxRetryPolicy" | "permanentFailureStatusCodes" | "circuitBreaker" | "firstKnock"
> {
  const circuitBreaker: CircuitBreakerOptions = {
    // Fedify's own: five failures (no answer, or a 5xx) within ten minutes pause the server; a 4xx
    // is an answer and resets the count.
    failureThreshold: 5,
    failureWindow: { minutes: 10 },
    // Then one delivery tries it again after this long; the rest wait for its outcome.
    recoveryDelay: { milliseconds: config.federationPauseMs },
    // Held deliveries are kept a week (longer than the 48 h of retries: a paused server gets
    // what was held for it when it answers again), then dropped.
    heldActivityTtl: { days: 7 },
    onStateChange: (host, from, to) => {
      if (to === "open") log.warn({ host, from }, "federation: deliveries to this server paused, it keeps failing");
      else if (to === "closed") log.info({ host, from }, "federation: this server answers again, deliveries resume");
    },
    onActivityDrop: (host, drop) =>
      log.warn(
        { host, inbox: drop.inbox.href, activity: drop.activityId, heldSince: drop.heldSince.toString() },
        "federation: a delivery held for a paused server was dropped after a week",
      ),
  };
  return {
    outboxRetryPolicy: deliveryRetryPolicy(config.federationRetryMs),
    permanentFailureStatusCodes: [404, 410],
    circuitBreaker,
    // As the signed GETs (src/federation/document-loader.ts): draft-cavage is what Mastodon,
    // Misskey and GoToSocial check. A server answering 400 or above 401 is sent RFC 9421 next,
    // and what it accepted is remembered for it (Fedify's double knock).
    firstKnock: "draft-cavage-http-signatures-12",
  };
}

/**
 * Sends `activity` as local actor `identifier` to `recipients`, through the queue (never
 * `immediate`: the queue is what makes delivery durable and guarded). The ordering key is the
 * sender: Fedify keys each inbox's message by it and the inbox's origin, so one actor's activities
 * reach one server in the order they were sent (a Follow before its Undo), while other actors'
 * deliveries to that server are not held up behind them.
 */
export async function deliver(
  ctx: Context<AppServices>,
  identifier: string,
  recipients: Recipient | Recipient[],
  activity: Activity,
): Promise<void> {
  // A blocked server is sent nothing (docs/federation.md#moderation); what was queued for it before
  // its block is dropped at its turn (GuardedQueue).
  const table = await ctx.data.instances.current();
  const kept = (Array.isArray(recipients) ? recipients : [recipients]).filter((recipient) => {
    const inbox = recipient.endpoints?.sharedInbox ?? recipient.inboxId;
    return ![recipient.id, inbox].some((url) => url && policyIn(table, url.host) === "block");
  });
  if (kept.length === 0) return;
  await ctx.sendActivity({ identifier }, kept, activity, { orderingKey: identifier, preferSharedInbox: true });
}

export interface DeliveryGuard {
  /** FEDERATION_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  userAgent: GetUserAgentOptions | string;
  /** Where each delivery's outcome goes (src/federation/hosts.ts): /metrics and the per-host record. */
  recorder?: Pick<DeliveryRecorder, "record" | "flush">;
  /** FEDERATION_HOST_CONCURRENCY: deliveries to one server at once in this process (src/federation/host-slots.ts). */
  hostConcurrency?: number;
  /** Whether a server is blocked here (docs/federation.md#moderation): what was queued for it is dropped unsent. */
  blocked?(host: string): Promise<boolean>;
  /**
   * Moves every delivery waiting for the inboxes under `prefix` (a server's origin and "/") to
   * `delayMs` from now, unless due later anyway: PostgresMessageQueue.postpone.
   */
  postpone?(prefix: string, delayMs: number): Promise<unknown>;
}

interface Delivering {
  allowPrivate: boolean;
  userAgent: string;
  /** Redirects answered in this delivery so far: Fedify follows up to 20; Murmur's bound is 5. */
  redirects: number;
  /** How its POST went, if it sent one (a held delivery sends none): src/federation/host-slots.ts. */
  slot: SlotOutcome;
  /** A delivery to one inbox (an outbox message; a fanout only enqueues those): what came of it. */
  outcome?: { post?: DeliveryPost; requeued?: "retried" | "held" };
}

const delivering = new AsyncLocalStorage<Delivering>();

let unguarded: typeof fetch | undefined;

/** Replaces the global fetch, once per process, by one that guards what runs in a delivery's scope. */
function guardGlobalFetch(): void {
  if (unguarded) return;
  const original = globalThis.fetch;
  unguarded = original;
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const delivery = delivering.getStore();
    return delivery ? deliveryFetch(delivery, new Request(input, init)) : original(input, init);
  }) as typeof fetch;
}

/** One request of a delivery: safeFetch's bounds, Murmur's User-Agent, at most 5 redirects in all. */
async function deliveryFetch(delivery: Delivering, request: Request): Promise<Response> {
  // Not among the signed headers (draft-cavage and RFC 9421 alike): set after signing it is still valid.
  request.headers.set("user-agent", delivery.userAgent);
  let response: Response;
  try {
    delivery.slot.posted = true;
    response = await safeFetch(request, { allowPrivate: delivery.allowPrivate, signal: request.signal });
  } catch (err) {
    delivery.slot.failed = true;
    if (delivery.outcome) delivery.outcome.post = { error: failureOf(err) };
    throw err;
  }
  delivery.slot.failed = response.status >= 500;
  if (delivery.outcome) delivery.outcome.post = { status: response.status };
  if (response.status >= 300 && response.status < 400 && response.headers.has("location")) {
    delivery.redirects++;
    if (delivery.redirects > FETCH_LIMITS.maxRedirects) {
      throw new UnsafeFetchError(`delivery to ${request.url}: more than ${FETCH_LIMITS.maxRedirects} redirects`);
    }
  }
  return response;
}

/** A failed POST in a line for the operator: what failed, and why as its cause says (ECONNREFUSED). */
function failureOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  const why = cause?.code ?? cause?.message;
  return typeof why === "string" && !err.message.includes(why) ? `${err.message}: ${why}` : err.message;
}

/** Whether a queued message is one of Fedify's outgoing ones (it sends), rather than an incoming activity. */
function isOutgoing(message: unknown): boolean {
  const type = (message as { type?: unknown } | null)?.type;
  return type === "outbox" || type === "fanout";
}

/**
 * `queue` as Fedify is given it: the same messages, but each outgoing one handled in a delivery's
 * scope. Incoming activities are not: what their handling fetches goes through Murmur's loaders
 * already, and what else it calls (Meilisearch, S3) is no peer's.
 */
export class GuardedQueue implements MessageQueue {
  readonly nativeRetrial?: boolean;
  readonly enqueueMany?: MessageQueue["enqueueMany"];
  readonly getDepth?: MessageQueue["getDepth"];
  private readonly userAgent: string;
  private readonly slots?: HostSlots;
  /** Till when what waits for each paused server (by origin) was last held, and when: holdServer. */
  private readonly heldUntil = new Map<string, { until: number; at: number }>();

  constructor(
    private readonly queue: MessageQueue,
    private readonly guard: DeliveryGuard,
  ) {
    guardGlobalFetch();
    this.nativeRetrial = queue.nativeRetrial;
    this.userAgent = typeof guard.userAgent === "string" ? guard.userAgent : getUserAgent(guard.userAgent);
    if (guard.hostConcurrency) this.slots = new HostSlots(guard.hostConcurrency);
    if (queue.enqueueMany) this.enqueueMany = queue.enqueueMany.bind(queue);
    if (queue.getDepth) this.getDepth = queue.getDepth.bind(queue);
  }

  async enqueue(message: unknown, options?: MessageQueueEnqueueOptions): Promise<void> {
    // Fedify queues a delivery again from within its handling: a retry, or held for a paused server.
    const outcome = delivering.getStore()?.outcome;
    const { circuitHeld, inbox } = message as { circuitHeld?: unknown; inbox?: unknown };
    if (outcome) outcome.requeued = circuitHeld ? "held" : "retried";
    await this.queue.enqueue(message, options);
    if (circuitHeld && typeof inbox === "string" && options?.delay) {
      await this.holdServer(inbox, options.delay.total("millisecond"));
    }
  }

  /**
   * A delivery held for a paused server holds everything queued for that server as long, in one
   * statement: otherwise each is claimed, found paused and queued again in turn, at every end of a
   * pause: 10,000 deliveries for a dead server were a minute of both cores every half hour
   * (bench/README.md). Each process does it for the holds it comes upon.
   */
  private async holdServer(inbox: string, delayMs: number): Promise<void> {
    const { postpone } = this.guard;
    let origin: string;
    try {
      origin = new URL(inbox).origin;
    } catch {
      return;
    }
    if (!postpone || origin === "null") return;
    const now = Date.now();
    const until = now + delayMs;
    // Again at most once a second for one pause: what was queued for the server since (a fan-out
    // still being queued) moves with it.
    const last = this.heldUntil.get(origin);
    if (last && last.until >= until - Math.min(delayMs / 2, 60_000) && now - last.at < 1_000) return;
    if (this.heldUntil.size >= 1_000) {
      for (const [known, held] of this.heldUntil) if (held.until < now) this.heldUntil.delete(known);
    }
    this.heldUntil.set(origin, { until, at: now });
    // Only a saving: what is not moved is held in its turn, as it would have been.
    await postpone(`${origin}/`, delayMs).catch(() => {});
  }

  /**
   * A delivery to a server with all its slots taken, queued again for its next turn, as it is
   * (its attempt, its hold and its ordering key: Fedify queues its own retries the same way).
   */
  private defer(message: unknown, host: string, slots: HostSlots): Promise<void> {
    const orderingKey = (message as { orderingKey?: unknown }).orderingKey;
    return this.queue.enqueue(message, {
      delay: Temporal.Duration.from({ milliseconds: slots.deferral(host) }),
      ...(typeof orderingKey === "string" && { orderingKey }),
    });
  }

  async listen(
    handler: (message: unknown) => Promise<void> | void,
    options?: MessageQueueListenOptions,
  ): Promise<void> {
    const { recorder } = this.guard;
    try {
      await this.queue.listen(async (message) => {
        if (!isOutgoing(message)) return handler(message);
        const inbox = (message as { type: string; inbox?: unknown }).inbox;
        const host = typeof inbox === "string" ? hostOf(inbox) : undefined;
        if (host && (await this.guard.blocked?.(host))) {
          this.guard.recorder?.record(inbox as string, "dropped", undefined);
          return;
        }
        const slot = host && this.slots ? this.slots.take(host) : undefined;
        if (host && this.slots && !slot) return this.defer(message, host, this.slots);
        const scope: Delivering = {
          allowPrivate: this.guard.allowPrivate,
          userAgent: this.userAgent,
          redirects: 0,
          slot: { posted: false, failed: false },
        };
        if (recorder && typeof inbox === "string") scope.outcome = {};
        try {
          await delivering.run(scope, () => handler(message));
        } catch (err) {
          // The queue tries the message again.
          if (scope.outcome) scope.outcome.requeued = "retried";
          throw err;
        } finally {
          slot?.(scope.slot);
          if (scope.outcome) recorder?.record(inbox as string, outcomeOf(scope.outcome), scope.outcome.post);
        }
      }, options);
    } finally {
      // What this process gathered is written before it stops working the queue.
      await recorder?.flush();
    }
  }
}

/** An inbox URL's server as Fedify's circuit breaker names it (host and port); undefined if no URL. */
function hostOf(inbox: string): string | undefined {
  try {
    return new URL(inbox).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/** What became of a delivery, from what it did: queued again, answered, or neither (given up). */
function outcomeOf({ post, requeued }: NonNullable<Delivering["outcome"]>): DeliveryOutcome {
  if (requeued) return requeued;
  const status = post?.status;
  if (status !== undefined && status >= 200 && status < 300) return "delivered";
  if (status === 404 || status === 410) return "permanent_failure";
  return "dropped";
}
