// Rate limits (docs/protection.md#rate-limits), like Mastodon's: per IP for unauthenticated
// requests, login and registration; per account for authenticated requests and uploads. Every limit
// is multiplied by RATE_LIMIT_MULTIPLIER; 0 turns them off. Over a limit: 429 RATE_LIMITED with
// Retry-After; limited responses carry X-RateLimit-Limit, -Remaining and -Reset. Counters live in
// memory, or in Redis (REDIS_URL) when several instances share the load. The groups (login,
// registration, uploads) are counted alike through REST and GraphQL: a REST route of a group counts
// in its onRequest hook (@fastify/rate-limit), a GraphQL field of one counts each time it is
// resolved (`take`, below), both against one counter per group and IP or account, in the same
// store. So are the general limits: an HTTP request counts in its hook, an operation over a
// WebSocket, which no hook sees, by `takeRequest`.
import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import LocalStore from "@fastify/rate-limit/store/LocalStore.js";
import RedisStore from "@fastify/rate-limit/store/RedisStore.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import type { AppServices } from "../services.ts";
import { logAccount } from "./request-log.ts";

export type RateLimitGroup = "login" | "register" | "upload";

interface Limit {
  max: number;
  minutes: number;
  per: "ip" | "caller";
}

// Passphrase reset requests are in `register`: one allowance for both.
const GROUPS: Record<RateLimitGroup, Limit> = {
  login: { max: 25, minutes: 5, per: "ip" },
  register: { max: 5, minutes: 30, per: "ip" },
  upload: { max: 30, minutes: 30, per: "caller" },
};
const ANONYMOUS = { max: 300, minutes: 5 };
const AUTHENTICATED = { max: 1500, minutes: 5 };
/** Counters kept in memory: an LRU of this many, for every limit together. */
const MEMORY_COUNTERS = 50_000;

/** Who a request counts as: its address, and its account when its credentials are valid. */
interface Who {
  ip: string;
  accountId?: bigint;
}

/** `ip`, and the account of `authorization` (an Authorization header's value) if it is a valid token. */
async function callerOf(services: Services, ip: string, authorization: string | undefined): Promise<Who> {
  const match = authorization ? /^Bearer +(\S+)/i.exec(authorization) : null;
  if (match) {
    try {
      const claims = await services.tokens.verify(match[1], "access", true);
      return { ip, accountId: claims.accountId };
    } catch {
      // An unusable token counts against its IP; the route answers it 401 anyway.
    }
  }
  return { ip };
}

/** The request's address, and its account if it has a valid token. */
async function requestCaller(services: Services, request: FastifyRequest): Promise<Who> {
  const who = await callerOf(services, request.ip, request.headers.authorization);
  if (who.accountId !== undefined) logAccount(request, who.accountId);
  return who;
}

/** `account:<id>` for a request with a valid token, else `ip:<address>`: the general limits' counter. */
const callerKey = (who: Who) => (who.accountId === undefined ? `ip:${who.ip}` : `account:${who.accountId}`);

/** The counter of `group` that `who` counts against, the same whichever protocol it came by. */
function groupKey(group: RateLimitGroup, who: Who): string {
  return `${group}:${GROUPS[group].per === "ip" ? `ip:${who.ip}` : callerKey(who)}`;
}

/**
 * @fastify/rate-limit's own store (LocalStore, or RedisStore under our name space), one for every
 * limit. The plugin would give each limited route a store of its own (`child`): a fresh LRU in
 * memory, a key prefix of its method and path in Redis, so that `/login` and `/v0/login`, or a
 * REST route and a GraphQL field, would each count apart. Keys name their group instead.
 */
function sharedStore(services: Services): { counters: FastifyRateLimitStore; Store: FastifyRateLimitStoreCtor } {
  const counters = services.redis
    ? new RedisStore(false, false, services.redis, "murmur:rate-limit:")
    : new LocalStore(false, false, MEMORY_COUNTERS);
  class SharedStore implements FastifyRateLimitStore {
    incr(...args: Parameters<FastifyRateLimitStore["incr"]>): void {
      counters.incr(...args);
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return { counters, Store: SharedStore };
}

export interface RateLimits {
  /** The route config of a route in `group`, or of a route left unlimited (undefined group). */
  routeConfig(group: RateLimitGroup | "none" | undefined): Record<string, unknown>;
  /**
   * Counts one use of `group` by `who` (a GraphQL field): past the limit, throws DomainError
   * RATE_LIMITED, before anything is done.
   */
  take(group: RateLimitGroup, who: Who): Promise<void>;
  /**
   * Counts one request by the holder of `authorization` from `ip` against the general limits, as
   * an HTTP request counts in its hook (a GraphQL operation over a WebSocket): past them, throws
   * DomainError RATE_LIMITED, before anything is done.
   */
  takeRequest(ip: string, authorization: string | undefined): Promise<void>;
}

export async function registerRateLimits(app: FastifyInstance, services: AppServices): Promise<RateLimits> {
  const multiplier = services.config.rateLimitMultiplier;
  const scaled = (max: number) => Math.max(1, Math.ceil(max * multiplier));
  if (multiplier === 0) return { routeConfig: () => ({}), take: async () => {}, takeRequest: async () => {} };
  const { counters, Store } = sharedStore(services);
  // A Redis out of reach lets requests through rather than failing them.
  const skipOnError = services.redis !== undefined;
  /** Counts one against `key`: past `max` within `minutes`, throws RATE_LIMITED (refused by `limit`). */
  const count = async (key: string, max: number, minutes: number, limit: RateLimitGroup | "general") => {
    let current = 0;
    try {
      current = await new Promise<number>((resolve, reject) =>
        counters.incr(
          key,
          (err, result) => (err || !result ? reject(err) : resolve(result.current)),
          minutes * 60_000,
          max,
        ),
      );
    } catch (err) {
      if (!skipOnError) throw err;
    }
    if (current > max) {
      services.metrics.refused(limit);
      throw new DomainError("RATE_LIMITED");
    }
  };
  const generalMax = (key: string) => scaled(key.startsWith("account:") ? AUTHENTICATED.max : ANONYMOUS.max);
  await app.register(rateLimit, {
    global: true,
    store: Store,
    skipOnError,
    keyGenerator: async (request) => callerKey(await requestCaller(services, request)),
    max: (_request, key) => generalMax(key),
    timeWindow: ANONYMOUS.minutes * 60_000,
    errorResponseBuilder: (_request, context) => ({ statusCode: context.statusCode, code: "RATE_LIMITED" }),
    onExceeded: () => services.metrics.refused("general"),
  });
  return {
    routeConfig(group) {
      if (group === "none") return { rateLimit: false };
      if (!group) return {};
      const limit = GROUPS[group];
      return {
        rateLimit: {
          max: scaled(limit.max),
          timeWindow: limit.minutes * 60_000,
          keyGenerator: async (request: FastifyRequest) =>
            groupKey(group, limit.per === "ip" ? { ip: request.ip } : await requestCaller(services, request)),
          onExceeded: () => services.metrics.refused(group),
        },
      };
    },
    async take(group, who) {
      const limit = GROUPS[group];
      await count(groupKey(group, who), scaled(limit.max), limit.minutes, group);
    },
    async takeRequest(ip, authorization) {
      const key = callerKey(await callerOf(services, ip, authorization));
      await count(key, generalMax(key), ANONYMOUS.minutes, "general");
    },
  };
}
