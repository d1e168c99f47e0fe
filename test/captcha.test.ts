// Captcha providers verified through their siteverify request (docs/running.md#captcha), here
// answered by a local HTTP endpoint that speaks the same protocol (CAPTCHA_VERIFY_URL).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./support/server.ts";

const requests: URLSearchParams[] = [];
let siteverify: http.Server;
let url: string;

beforeAll(async () => {
  siteverify = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const form = new URLSearchParams(body);
      requests.push(form);
      const success = form.get("secret") === "s3cret" && form.get("response") === "human";
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ success, "error-codes": success ? [] : ["invalid-input-response"] }));
    });
  });
  await new Promise<void>((resolve) => siteverify.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(siteverify.address() as AddressInfo).port}/siteverify`;
});

afterAll(() => new Promise<void>((resolve) => siteverify.close(() => resolve())));

const body = (name: string, captcha: string) => ({
  name,
  email: `${name}@example.com`,
  passphrase: "correct-horse-battery",
  captcha_token: captcha,
});

describe.each(["turnstile", "hcaptcha", "recaptcha"])("%s", (provider) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ CAPTCHA_PROVIDER: provider, CAPTCHA_SECRET: "s3cret", CAPTCHA_VERIFY_URL: url });
  });
  afterAll(() => server.close());

  it("passes a token the provider accepts, sending secret and response", async () => {
    const answer = await server.request("POST", "/accounts", { body: body(`${provider}1`, "human") });
    expect(answer.status).toBe(200);
    expect(requests.at(-1)?.get("secret")).toBe("s3cret");
    expect(requests.at(-1)?.get("response")).toBe("human");
  });

  it("refuses a token the provider rejects with YOU_ARE_BOT", async () => {
    const answer = await server.request("POST", "/accounts", { body: body(`${provider}2`, "robot") });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "YOU_ARE_BOT" });
  });
});

describe("provider unreachable", () => {
  it("answers 503 SERVICE_UNAVAILABLE, not YOU_ARE_BOT or a 500", async () => {
    const server = await startTestServer({
      CAPTCHA_PROVIDER: "turnstile",
      CAPTCHA_SECRET: "s3cret",
      CAPTCHA_VERIFY_URL: "http://127.0.0.1:9/siteverify",
    });
    try {
      const answer = await server.request("POST", "/accounts", { body: body("unreach1", "human") });
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({ error: "SERVICE_UNAVAILABLE" });
      expect(answer.headers["retry-after"]).toBeDefined();
    } finally {
      await server.close();
    }
  });
});

describe("dev provider", () => {
  it("passes any non-empty token but `fail`", async () => {
    const server = await startTestServer();
    try {
      expect((await server.request("POST", "/accounts", { body: body("dev1", "anything") })).status).toBe(200);
      expect((await server.request("POST", "/accounts", { body: body("dev2", "fail") })).body).toEqual({
        error: "YOU_ARE_BOT",
      });
      expect((await server.request("POST", "/accounts", { body: body("dev3", "") })).body).toEqual({
        error: "YOU_ARE_BOT",
      });
    } finally {
      await server.close();
    }
  });
});
