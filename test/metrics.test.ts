// GET /metrics (Prometheus text format): the figures move with what the instance does, and with
// METRICS_TOKEN only its holder reads them; in production, nobody without it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openSse } from "./support/sse.ts";

const TOKEN = "metrics-token-0123456789";

let server: TestServer;
let alice: TestAccount;
let url: string;

beforeAll(async () => {
  // Rate limits scaled down so that one is reached: registrations 1 per IP here.
  server = await startTestServer({ METRICS_TOKEN: TOKEN, RATE_LIMIT_MULTIPLIER: "0.04" });
  alice = await account(server, "metrics_alice");
  url = await server.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await server.close();
});

async function scrape(): Promise<string> {
  const answer = await server.request("GET", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(answer.status).toBe(200);
  expect(answer.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
  return answer.body as string;
}

/** The value of the sample `name{labels}` (labels in the order prom-client writes them), or 0. */
function sample(text: string, name: string, labels = ""): number {
  const line = text.split("\n").find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line ? Number(line.split(" ").pop()) : 0;
}

describe("GET /metrics", () => {
  it("counts requests by route pattern and status, never by URL, with their latency", async () => {
    const noteCount = (text: string) =>
      sample(text, "murmur_http_requests_total", 'method="GET",route="/notes/:note_id",status="404"');
    const before = await scrape();
    for (const id of ["1", "2", "3"]) {
      expect((await server.request("GET", `/v0/notes/${id}`, { token: alice.token })).status).toBe(404);
    }
    const after = await scrape();
    expect(noteCount(after) - noteCount(before)).toBe(3);
    expect(after).not.toMatch(/route="\/(v0\/)?notes\/[0-9]/);
    expect(
      sample(after, "murmur_http_request_duration_seconds_count", 'method="GET",route="/notes/:note_id",status="404"'),
    ).toBe(noteCount(after));
    // Buckets count every answer at or below their bound: all of them under +Inf.
    const bucket = (le: string) =>
      sample(
        after,
        "murmur_http_request_duration_seconds_bucket",
        `le="${le}",method="GET",route="/notes/:note_id",status="404"`,
      );
    expect(bucket("+Inf")).toBe(noteCount(after));
    expect(bucket("0.005")).toBeLessThanOrEqual(bucket("10"));
    // The database pool, the event loop (prom-client's default metrics).
    expect(sample(after, "murmur_db_pool_connections")).toBeGreaterThan(0);
    expect(after).toMatch(/^murmur_db_pool_idle \d+$/m);
    expect(after).toMatch(/^murmur_db_pool_waiting \d+$/m);
    expect(after).toMatch(/^nodejs_eventloop_lag_seconds [\d.e-]+$/m);
    expect(after).toMatch(/^murmur_search_outbox_backlog 0$/m);
    expect(after).toMatch(/^murmur_search_outbox_oldest_seconds 0$/m);
  });

  it("counts the search outbox's backlog and its age, read at scrape time", async () => {
    await server.services.db.$executeRaw`
      INSERT INTO search_outbox (op, target_id, created_at) VALUES ('upsert', 1, now() - interval '90 seconds')`;
    try {
      const text = await scrape();
      expect(sample(text, "murmur_search_outbox_backlog")).toBe(1);
      expect(sample(text, "murmur_search_outbox_oldest_seconds")).toBeGreaterThanOrEqual(90);
    } finally {
      await server.services.db.$executeRaw`DELETE FROM search_outbox`;
    }
  });

  it("counts rate-limit refusals by limit", async () => {
    const refusals = (text: string) => sample(text, "murmur_rate_limit_refusals_total", 'limit="register"');
    const before = refusals(await scrape());
    const register = (name: string) =>
      server.app.inject({
        method: "POST",
        url: "/accounts",
        remoteAddress: "10.1.0.1",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ name, email: `${name}@example.com`, passphrase: "x", captcha_token: "ok" }),
      });
    expect((await register("metrics_one")).statusCode).toBe(400);
    expect((await register("metrics_two")).statusCode).toBe(429);
    expect(refusals(await scrape()) - before).toBe(1);
  });

  it("counts the live streams open", async () => {
    const open = async () => sample(await scrape(), "murmur_live_streams_open");
    expect(await open()).toBe(0);
    const stream = await openSse(`${url}/streaming/home`, { authorization: `Bearer ${alice.token}` });
    expect(stream.status).toBe(200);
    expect(await open()).toBe(1);
    stream.close();
    await expect.poll(open).toBe(0);
  });

  it("answers only the holder of METRICS_TOKEN when it is set", async () => {
    const none = await server.request("GET", "/metrics");
    expect([none.status, none.body, none.headers["www-authenticate"]]).toEqual([
      401,
      { error: "UNAUTHORIZED" },
      "Bearer",
    ]);
    // An account's token is not the metrics token.
    const other = await server.request("GET", "/metrics", { token: alice.token });
    expect([other.status, other.body]).toEqual([401, { error: "INVALID_TOKEN" }]);
  });

  it("with NODE_ENV=production and no METRICS_TOKEN, is not served at all: 404 NOT_FOUND, any credentials", async () => {
    const production = await startTestServer({ NODE_ENV: "production", CAPTCHA_PROVIDER: "dev" });
    try {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
        const answer = await production.request("GET", "/metrics", { headers });
        expect([answer.status, answer.body]).toEqual([404, { error: "NOT_FOUND" }]);
      }
    } finally {
      await production.close();
    }
    // With a METRICS_TOKEN, production serves its holder.
    const guarded = await startTestServer({ NODE_ENV: "production", CAPTCHA_PROVIDER: "dev", METRICS_TOKEN: TOKEN });
    try {
      const answer = await guarded.request("GET", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it("is open to anyone without METRICS_TOKEN", async () => {
    const open = await startTestServer();
    try {
      const answer = await open.request("GET", "/metrics");
      expect(answer.status).toBe(200);
      expect(answer.body).toContain("# TYPE murmur_http_requests_total counter");
    } finally {
      await open.close();
    }
  });
});
