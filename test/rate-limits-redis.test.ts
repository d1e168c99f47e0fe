// Rate limits shared through Redis (REDIS_URL, docs/protection.md#rate-limits): two instances
// behind one load balancer count together, REST and GraphQL alike, and a Redis out of reach lets
// requests through rather than failing them. Runs against REDIS_URL, or a redis-server this file
// starts; skipped, and says so, without one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisAvailable, startRedis, type TestRedis } from "./support/redis.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

if (!redisAvailable) {
  console.warn("rate-limits-redis: SKIPPED, no REDIS_URL and no redis-server on PATH (apt install redis-server)");
}

describe.skipIf(!redisAvailable)("rate limits in Redis", () => {
  let redis: TestRedis;
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    redis = await startRedis();
    // 300 x 0.04 = 12 unauthenticated requests per 5 minutes per IP, across both instances.
    const env = { RATE_LIMIT_MULTIPLIER: "0.04", REDIS_URL: redis.url };
    first = await startTestServer(env);
    second = await startTestServer(env, first.databaseUrl);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await redis?.stop();
  });

  const get = (server: TestServer, ip: string) =>
    server.app.inject({ method: "GET", url: "/timeline/global", remoteAddress: ip });

  it("counts one client's requests across both instances", async () => {
    // Fresh addresses per run, as a shared REDIS_URL may hold counters of earlier runs.
    const ip = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 12; i++) {
      const answer = await get(i % 2 ? second : first, ip);
      expect(answer.statusCode, `request ${i + 1}`).toBe(200);
      expect(answer.headers["x-ratelimit-remaining"]).toBe(String(11 - i));
    }
    for (const server of [first, second]) {
      const limited = await get(server, ip);
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toEqual({ error: "RATE_LIMITED" });
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    }
  });

  it("counts logins through REST and GraphQL together across both instances, each alias as one", async () => {
    // Logins: 25 x 0.04 = 1 per 5 minutes per IP.
    const ip = `10.7.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const field = (alias: string) =>
      `${alias}: login(name: "nobody", passphrase: "wrong-pass", captchaToken: "ok") { __typename ... on DomainError { code } }`;
    const graphql = async (server: TestServer, query: string) => {
      const answer = await server.app.inject({
        method: "POST",
        url: "/graphql",
        remoteAddress: ip,
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ query }),
      });
      expect(answer.statusCode).toBe(200);
      return answer.json().data;
    };
    const failed = { __typename: "DomainError", code: "FAILED_TO_LOGIN" };
    const refused = { __typename: "DomainError", code: "RATE_LIMITED" };
    expect(await graphql(first, `mutation { ${field("a")} ${field("b")} }`)).toEqual({ a: failed, b: refused });
    const rest = await second.app.inject({
      method: "POST",
      url: "/login",
      remoteAddress: ip,
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ name: "nobody", passphrase: "wrong-pass", captcha_token: "ok" }),
    });
    expect([rest.statusCode, rest.json()]).toEqual([429, { error: "RATE_LIMITED" }]);
    expect(await graphql(second, `mutation { ${field("a")} }`)).toEqual({ a: refused });
  });

  it("lets requests through while Redis is out of reach", async () => {
    const unreachable = await startTestServer(
      { RATE_LIMIT_MULTIPLIER: "0.04", REDIS_URL: "redis://127.0.0.1:9" },
      first.databaseUrl,
    );
    try {
      for (let i = 0; i < 15; i++) {
        const answer = await get(unreachable, "10.8.0.1");
        expect(answer.statusCode).toBe(200);
      }
      // GraphQL's logins too (1 per 5 minutes here, were they counted).
      const login = `login(name: "nobody", passphrase: "wrong-pass", captchaToken: "ok") { ... on DomainError { code } }`;
      const answer = await unreachable.app.inject({
        method: "POST",
        url: "/graphql",
        remoteAddress: "10.8.0.2",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ query: `mutation { a: ${login} b: ${login} }` }),
      });
      expect(answer.json().data).toEqual({ a: { code: "FAILED_TO_LOGIN" }, b: { code: "FAILED_TO_LOGIN" } });
    } finally {
      await unreachable.close();
    }
  });
});
