// With the database out of reach, the server still answers: /healthz 200, /readyz 503, and
// every operation 503 SERVICE_UNAVAILABLE with Retry-After, never a 500 or a hang
// (docs/faults.md#database).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { buildServer } from "../src/server.ts";
import { type AppServices, closeServices, createServices } from "../src/services.ts";
import { freePort } from "./support/net.ts";

let app: FastifyInstance;
let services: AppServices;

beforeAll(async () => {
  // A port nothing listens on: connections are refused at once.
  const port = await freePort();
  const config = loadConfig({ BCRYPT_COST: "4", LOG_LEVEL: "silent", WORKER_ID: "1" });
  services = await createServices(config, `postgresql://nobody:x@127.0.0.1:${port}/none`, createLogger("silent"));
  app = await buildServer(services);
});

afterAll(async () => {
  await app.close();
  await closeServices(services);
});

describe("database unreachable", () => {
  it("keeps /healthz up and reports /readyz 503", async () => {
    expect((await app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    expect(ready.statusCode).toBe(503);
    // The body names the check that fails.
    expect(ready.json()).toEqual({ error: "SERVICE_UNAVAILABLE", checks: { database: "down", storage: "up" } });
    expect(ready.headers["retry-after"]).toBe("1");
  });

  it.each([
    ["GET", "/accounts/alice", undefined],
    ["POST", "/login", { name: "alice", passphrase: "correct-horse", captcha_token: "ok" }],
    [
      "POST",
      "/accounts",
      { name: "alice", email: "alice@example.com", passphrase: "correct-horse", captcha_token: "ok" },
    ],
  ])("answers %s %s with 503 SERVICE_UNAVAILABLE and Retry-After", async (method, url, body) => {
    const answer = await app.inject({ method: method as "GET", url, payload: body as object | undefined });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({ error: "SERVICE_UNAVAILABLE" });
    expect(answer.headers["retry-after"]).toBe("1");
  });
});

describe("database unreachable, over GraphQL", () => {
  it.each([
    ["a timeline", "{ globalTimeline { __typename } }"],
    ["an account", '{ account(name: "alice") { __typename } }'],
  ])("answers %s with 503 SERVICE_UNAVAILABLE and Retry-After, not a masked 200", async (_what, query) => {
    const answer = await app.inject({
      method: "POST",
      url: "/graphql",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ query }),
    });
    expect(answer.statusCode).toBe(503);
    expect(answer.headers["retry-after"]).toBe("1");
    expect(answer.json().errors[0]).toMatchObject({
      message: "SERVICE_UNAVAILABLE",
      extensions: { code: "SERVICE_UNAVAILABLE" },
    });
  });
});
