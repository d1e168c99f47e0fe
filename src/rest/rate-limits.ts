// Rate limits (CONTRACT 10), like Mastodon's: per IP for unauthenticated requests, login and
// registration; per account for authenticated requests and uploads. Every limit is multiplied
// by RATE_LIMIT_MULTIPLIER; 0 turns them off. Over a limit: 429 RATE_LIMITED with Retry-After;
// limited responses carry X-RateLimit-Limit, -Remaining and -Reset. Counters live in memory, or
// in Redis (REDIS_URL) when several instances share the load.
import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Services } from "../domain/context.ts";
import { logAccount } from "../http/request-log.ts";

export type RateLimitGroup = "login" | "register" | "upload";

interface Limit {
  max: number;
  minutes: number;
  per: "ip" | "caller";
}

const GROUPS: Record<RateLimitGroup, Limit> = {
  login: { max: 25, minutes: 5, per: "ip" },
  register: { max: 5, minutes: 30, per: "ip" },
  upload: { max: 30, minutes: 30, per: "caller" },
};
const ANONYMOUS = { max: 300, minutes: 5 };
const AUTHENTICATED = { max: 1500, minutes: 5 };

/** `account:<id>` for a request with a valid token, else `ip:<address>`. */
async function callerKey(services: Services, request: FastifyRequest): Promise<string> {
  const header = request.headers.authorization;
  const match = header ? /^Bearer +(\S+)/i.exec(header) : null;
  if (match) {
    try {
      const claims = await services.tokens.verify(match[1], "access", true);
      logAccount(request, claims.accountId);
      return `account:${claims.accountId}`;
    } catch {
      // An unusable token counts against its IP; the route answers it 401 anyway.
    }
  }
  return `ip:${request.ip}`;
}

export interface RateLimits {
  /** The route config of a route in `group`, or of a route left unlimited (undefined group). */
  routeConfig(group: RateLimitGroup | "none" | undefined): Record<string, unknown>;
}

export async function registerRateLimits(app: FastifyInstance, services: Services): Promise<RateLimits> {
  const multiplier = services.config.rateLimitMultiplier;
  const scaled = (max: number) => Math.max(1, Math.ceil(max * multiplier));
  if (multiplier === 0) return { routeConfig: () => ({}) };
  const redis = services.redis;
  await app.register(rateLimit, {
    global: true,
    ...(redis && { redis, nameSpace: "murmur:rate-limit:", skipOnError: true }),
    keyGenerator: (request) => callerKey(services, request),
    max: (_request, key) => scaled(key.startsWith("account:") ? AUTHENTICATED.max : ANONYMOUS.max),
    timeWindow: ANONYMOUS.minutes * 60_000,
    errorResponseBuilder: (_request, context) => ({ statusCode: context.statusCode, code: "RATE_LIMITED" }),
    // Every limit, the routes' own too (their options are merged over these).
    onExceeded: (request) => {
      const group = (request.routeOptions.config as { rateLimit?: { groupId?: string } }).rateLimit?.groupId;
      services.metrics.refused(group ?? "general");
    },
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
          groupId: group,
          keyGenerator: (request: FastifyRequest) =>
            limit.per === "ip" ? `ip:${request.ip}` : callerKey(services, request),
        },
      };
    },
  };
}
