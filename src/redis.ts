// The Redis an instance shares with the fleet (REDIS_URL, docs/fleet.md#instances): rate-limit
// counters, read replicas' write positions. A Redis that cannot be reached must not take the API
// down with it: commands fail fast (no offline queue, one try, 1 s), each user falls back (limits
// let requests through, reads go to the primary), and the client reconnects in the background.
import { Redis } from "ioredis";
import type { Logger } from "pino";

export type { Redis };

export function createRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 1000,
    commandTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  redis.on("error", (err) => log.warn({ err }, "Redis unreachable"));
  return redis;
}
