// Rate limits (CONTRACT 10), scaled down by RATE_LIMIT_MULTIPLIER=0.04: login 1 per 5 min and
// registration 1 per 30 min per IP, unauthenticated 12 per 5 min per IP, authenticated 60 per
// 5 min per account, uploads 2 per 30 min per account.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { directAccount, PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import { wav } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let limited: TestServer;
/** Rate limits as `limited`'s, behind a proxy at 10.9.0.1 that TRUST_PROXY names. */
let proxied: TestServer;
/** The same behind one hop (TRUST_PROXY=1): whatever connects is taken for the proxy. */
let oneHop: TestServer;
let alice: TestAccount;
let bob: TestAccount;

// Each test comes from its own address, so the per-IP limits do not mix.
const from =
  (ip: string) =>
  async (method: string, url: string, options: { body?: unknown; token?: string } = {}) => {
    const response = await limited.app.inject({
      method: method as "GET",
      url,
      remoteAddress: ip,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body ? { "content-type": "application/json" } : {}),
      },
      payload: options.body ? JSON.stringify(options.body) : undefined,
    });
    return { status: response.statusCode, body: response.json(), headers: response.headers } as Answer;
  };

/** A registration arriving from `socket`, saying it is forwarded for `forwardedFor`. */
async function register(on: TestServer, socket: string, forwardedFor: string, name: string): Promise<Answer> {
  const response = await on.app.inject({
    method: "POST",
    url: "/accounts",
    remoteAddress: socket,
    headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor },
    payload: JSON.stringify({ name, email: `${name}@example.com`, passphrase: PASSPHRASE, captcha_token: "ok" }),
  });
  return { status: response.statusCode, body: response.json(), headers: response.headers } as Answer;
}

function expectLimited(answer: Answer): void {
  expect(answer.status).toBe(429);
  expect(answer.body).toEqual({ error: "RATE_LIMITED" });
  expect(Number(answer.headers["retry-after"])).toBeGreaterThan(0);
}

beforeAll(async () => {
  server = await startTestServer();
  limited = await startTestServer({ RATE_LIMIT_MULTIPLIER: "0.04" });
  proxied = await startTestServer({ RATE_LIMIT_MULTIPLIER: "0.04", TRUST_PROXY: "10.9.0.1" });
  oneHop = await startTestServer({ RATE_LIMIT_MULTIPLIER: "0.04", TRUST_PROXY: "1" });
  alice = await directAccount(limited, "rl_alice");
  bob = await directAccount(limited, "rl_bob");
});
afterAll(async () => {
  await oneHop.close();
  await proxied.close();
  await limited.close();
  await server.close();
});

describe("rate limits", () => {
  it("allow 1 login per 5 minutes per IP here (25 x 0.04), then answer 429 RATE_LIMITED", async () => {
    const request = from("10.0.0.1");
    const first = await request("POST", "/login", {
      body: { name: "nobody", passphrase: "wrong-pass", captcha_token: "ok" },
    });
    expect(first.status).toBe(400);
    expect(first.headers["x-ratelimit-limit"]).toBe("1");
    expect(first.headers["x-ratelimit-remaining"]).toBe("0");
    expect(first.headers["x-ratelimit-reset"]).toBeDefined();
    expectLimited(
      await request("POST", "/login", { body: { name: "nobody", passphrase: "wrong-pass", captcha_token: "ok" } }),
    );
    // Another address has its own allowance.
    expect(
      (await from("10.0.0.2")("POST", "/login", { body: { name: "x", passphrase: "wrong-pass", captcha_token: "ok" } }))
        .status,
    ).toBe(400);
  });

  it("allow 1 registration per 30 minutes per IP here (5 x 0.04)", async () => {
    const request = from("10.0.1.1");
    const body = (name: string) => ({
      name,
      email: `${name}@example.com`,
      passphrase: PASSPHRASE,
      captcha_token: "ok",
    });
    expect((await request("POST", "/accounts", { body: body("rl_one") })).status).toBe(200);
    expectLimited(await request("POST", "/accounts", { body: body("rl_two") }));
  });

  it("allow 12 unauthenticated requests per 5 minutes per IP here (300 x 0.04)", async () => {
    const request = from("10.0.2.1");
    for (let i = 0; i < 12; i++) expect((await request("GET", "/timeline/global")).status).toBe(200);
    expectLimited(await request("GET", "/timeline/global"));
    expectLimited(await request("GET", "/accounts/rl_alice"));
  });

  it("count authenticated requests per account (60 here, 1,500 x 0.04), whatever the IP", async () => {
    for (let i = 0; i < 60; i++) {
      const answer = await from(`10.0.3.${i % 200}`)("GET", "/timeline/home", { token: alice.token });
      expect(answer.status, `request ${i + 1}`).toBe(200);
    }
    expectLimited(await from("10.0.3.250")("GET", "/timeline/home", { token: alice.token }));
    // Another account, from the same addresses, is not affected.
    expect((await from("10.0.3.1")("GET", "/timeline/home", { token: bob.token })).status).toBe(200);
  });

  it("allow 2 uploads per 30 minutes per account here (30 x 0.04)", async () => {
    const carol = await directAccount(limited, "rl_carol");
    const upload = async () => {
      const form = new FormData();
      form.set("name", "x.wav");
      form.set("file", new Blob([new Uint8Array(wav())]), "x.wav");
      const encoded = new Response(form);
      const response = await limited.app.inject({
        method: "POST",
        url: "/drive",
        remoteAddress: "10.0.5.1",
        headers: { "content-type": encoded.headers.get("content-type") ?? "", authorization: `Bearer ${carol.token}` },
        payload: Buffer.from(await encoded.arrayBuffer()),
      });
      return { status: response.statusCode, body: response.json(), headers: response.headers } as Answer;
    };
    expect((await upload()).status).toBe(200);
    expect((await upload()).status).toBe(200);
    expectLimited(await upload());
  });

  it("leave health checks and file downloads unlimited", async () => {
    const request = from("10.0.4.1");
    for (let i = 0; i < 20; i++) expect((await request("GET", "/healthz")).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await request("GET", "/files/1")).status).toBe(404);
  });

  it("are off with RATE_LIMIT_MULTIPLIER=0: no limit and no headers", async () => {
    const answer = await server.request("POST", "/login", {
      body: { name: "x", passphrase: "wrong-pass", captcha_token: "ok" },
    });
    expect(answer.headers["x-ratelimit-limit"]).toBeUndefined();
  });
});

describe("rate limits behind a proxy (TRUST_PROXY)", () => {
  it("count each forwarded client apart when the proxy is trusted", async () => {
    // Registration: 1 per 30 minutes per IP here; the proxy's own address never counts.
    expect((await register(proxied, "10.9.0.1", "203.0.113.1", "tp_one")).status).toBe(200);
    expect((await register(proxied, "10.9.0.1", "203.0.113.2", "tp_two")).status).toBe(200);
    expect((await register(proxied, "10.9.0.1", "198.51.100.7, 203.0.113.3", "tp_three")).status).toBe(200);
    // The client the proxy saw is the last address; what the client itself sent before it is not believed.
    expectLimited(await register(proxied, "10.9.0.1", "203.0.113.2", "tp_four"));
    expectLimited(await register(proxied, "10.9.0.1", "203.0.113.9, 203.0.113.1", "tp_five"));
  });

  it("with a hop count, take the address the last proxy appended", async () => {
    expect((await register(oneHop, "10.9.1.1", "203.0.113.40", "tp_eleven")).status).toBe(200);
    expect((await register(oneHop, "10.9.1.1", "203.0.113.9, 203.0.113.41", "tp_twelve")).status).toBe(200);
    expectLimited(await register(oneHop, "10.9.1.2", "203.0.113.41", "tp_thirteen"));
  });

  it("count a client by its socket's address when it is not a trusted proxy", async () => {
    // A client that reaches the server past the proxy cannot choose its address.
    expect((await register(proxied, "10.9.0.2", "203.0.113.20", "tp_six")).status).toBe(200);
    expectLimited(await register(proxied, "10.9.0.2", "203.0.113.21", "tp_seven"));
  });

  it("never believe X-Forwarded-For when no proxy is trusted (the default)", async () => {
    expect((await register(limited, "10.0.6.1", "203.0.113.30", "tp_eight")).status).toBe(200);
    expectLimited(await register(limited, "10.0.6.1", "203.0.113.31", "tp_nine"));
    expectLimited(await register(limited, "10.0.6.1", "10.0.6.2", "tp_ten"));
  });
});
