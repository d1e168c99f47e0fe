// What an inbox POST must pass before its body is read or its signature checked
// (docs/federation.md#moderation): the server it comes from, as its signature's key names it,
// must not be blocked here, nor over its rate (FEDERATION_INBOX_RATE a minute, a large body counting
// more). Whatever is refused here costs a header's parse, a look-up in memory and a counter's
// increments, and changes nothing.
import type { FastifyRateLimitStore } from "@fastify/rate-limit";
import LocalStore from "@fastify/rate-limit/store/LocalStore.js";
import RedisStore from "@fastify/rate-limit/store/RedisStore.js";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../domain/context.ts";

/**
 * The host of the key an inbox POST is signed with: draft-cavage's `Signature: keyId="…"` or
 * RFC 9421's `Signature-Input: sig1=(…);keyid="…"`. Undefined when unsigned (Fedify answers 401)
 * or when the key is no URL.
 */
export function sendingHost(headers: FastifyRequest["headers"]): string | undefined {
  const signature = headers["signature-input"] ?? headers.signature;
  const text = Array.isArray(signature) ? signature[0] : signature;
  const keyId = text && /keyid="([^"]+)"/i.exec(text)?.[1];
  if (!keyId) return undefined;
  try {
    return new URL(keyId).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/** The window of FEDERATION_INBOX_RATE. */
const RATE_WINDOW_MS = 60_000;
/** Servers counted in memory without Redis: an LRU of this many. */
const MEMORY_COUNTERS = 10_000;
/**
 * A POST counts once more for each of these it carries: what an activity costs to read grows with
 * its size (a 1 KB one about 10 ms of CPU in all, an 800 KB one of 24,000 addresses 400 ms), so a
 * server sending 1 MiB bodies has about a fiftieth of the POSTs of one sending ordinary activities.
 */
const WEIGHT_BYTES = 16 * 1024;

/**
 * The POSTs of each sending server this minute (FEDERATION_INBOX_RATE), in @fastify/rate-limit's
 * own stores as the HTTP rate limits keep theirs (src/http/rate-limits.ts): Redis when REDIS_URL
 * is set, so that a fleet counts a server once, else this process's memory.
 */
function inboxCounters(services: Pick<Services, "redis">): FastifyRateLimitStore {
  return services.redis
    ? new RedisStore(false, false, services.redis, "murmur:inbox-rate:")
    : new LocalStore(false, false, MEMORY_COUNTERS);
}

/**
 * How many times an inbox POST counts, by its Content-Length; one without (a body streamed) as one
 * of the largest body taken, `bodyLimit`.
 */
function weightOf(request: FastifyRequest, bodyLimit: number): number {
  const length = Number(request.headers["content-length"] ?? bodyLimit);
  return 1 + Math.floor(Math.min(Number.isFinite(length) ? length : bodyLimit, bodyLimit) / WEIGHT_BYTES);
}

/** The refusal of an inbox POST, or undefined to let it through. */
export function inboxGate(services: Pick<Services, "instances" | "redis" | "config">, bodyLimit: number) {
  const counters = inboxCounters(services);
  const max = services.config.federationInboxRate;
  /** This POST counted against its server: how many it sent this window, and when the window ends. */
  const count = (host: string) =>
    new Promise<{ current: number; ttl: number } | undefined>((resolve) =>
      counters.incr(
        host,
        // A Redis out of reach lets POSTs through, as the HTTP limits do.
        (err, result) => resolve(err || !result ? undefined : result),
        RATE_WINDOW_MS,
        max,
      ),
    );
  return async (
    request: FastifyRequest,
    reply?: FastifyReply,
  ): Promise<{ status: number; error: string } | undefined> => {
    const host = sendingHost(request.headers);
    if (host && (await services.instances.of(host)) === "block") return { status: 403, error: "NO_PERMISSION" };
    // An unsigned POST names no server, and is refused once read (its JSON-LD read first: its
    // contexts fetched), so its address counts: no per-address limit holds inbox POSTs back.
    const key = host ?? `unsigned:${request.ip}`;
    // The stores add one at a time: a large body's weight is that many counts, sent together.
    const counts = await Promise.all(Array.from({ length: weightOf(request, bodyLimit) }, () => count(key)));
    const counted = counts.reduce((most, one) => (one && (!most || one.current > most.current) ? one : most));
    if (counted && counted.current > max) {
      reply?.header("retry-after", String(Math.max(1, Math.ceil(counted.ttl / 1000))));
      return { status: 429, error: "RATE_LIMITED" };
    }
    return undefined;
  };
}
