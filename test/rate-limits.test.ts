// Rate limits (docs/protection.md#rate-limits), scaled down by RATE_LIMIT_MULTIPLIER=0.04: login 1
// per 5 min and registration 1 per 30 min per IP, unauthenticated 12 per 5 min per IP,
// authenticated 60 per 5 min per account, uploads 2 per 30 min per account. GraphQL's login,
// createAccount, requestPassphraseReset and uploadFile count against the same counters as their
// REST routes, and each operation over a WebSocket against the general limits as an HTTP request
// does.
import { createClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
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
    const body = response.body ? response.json() : undefined;
    return { status: response.statusCode, body, headers: response.headers } as Answer;
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

/** A GraphQL document sent to `limited` from `ip`: its `data`. */
async function graphql(ip: string, query: string, token?: string) {
  const answer = await from(ip)("POST", "/graphql", { body: { query }, token });
  expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
  expect(answer.status).toBe(200);
  return answer.body.data;
}

/** A mutation of `count` login fields, aliased l0, l1, ... */
function logins(count: number): string {
  const field = (i: number) =>
    `l${i}: login(name: "nobody", passphrase: "wrong-pass", captchaToken: "ok") { __typename ... on DomainError { code } }`;
  return `mutation { ${Array.from({ length: count }, (_, i) => field(i)).join(" ")} }`;
}

const FAILED = { __typename: "DomainError", code: "FAILED_TO_LOGIN" };
const REFUSED = { __typename: "DomainError", code: "RATE_LIMITED" };
const REST_LOGIN = { body: { name: "nobody", passphrase: "wrong-pass", captcha_token: "ok" } };

/** `limited`'s WebSocket URL, listening from the first call on. */
let listening: Promise<string> | undefined;
async function wsUrl(): Promise<string> {
  listening ??= limited.app.listen({ port: 0, host: "127.0.0.1" });
  return `${(await listening).replace(/^http/, "ws")}/graphql`;
}

/** What an operation over graphql-ws came to: its result, or the errors of its `error` message. */
type WsOutcome = { result?: unknown; errors?: unknown[] };

/**
 * A graphql-ws client of `limited` on one socket, opened from `ip` (an address of the loopback
 * network, so that per-IP counters do not mix), with `token` in connection_init's payload.
 */
async function overWs(ip: string, token?: string) {
  const from = class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { localAddress: ip });
    }
  };
  const client = createClient({
    url: await wsUrl(),
    webSocketImpl: from,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    // One socket for every operation: a lazy client closes it when none is running.
    lazy: false,
  });
  const run = (query: string) =>
    new Promise<WsOutcome>((resolve, reject) => {
      let result: unknown;
      client.subscribe(
        { query },
        {
          next: (r) => (result = r),
          error: (err) => (Array.isArray(err) ? resolve({ errors: err }) : reject(err)),
          complete: () => resolve({ result }),
        },
      );
    });
  return { run, dispose: () => client.dispose() };
}

/** The `error` message's payload of an operation refused over graphql-ws, as HTTP's 429 says it. */
const WS_REFUSED = { errors: [{ message: "RATE_LIMITED", extensions: { code: "RATE_LIMITED" } }] };

/** Runs `query` over `socket` until it is refused: how many ran before, and the refusal. */
async function untilRefused(socket: Awaited<ReturnType<typeof overWs>>, query: string, most: number) {
  for (let ran = 0; ran <= most; ran++) {
    const outcome = await socket.run(query);
    if (outcome.errors) return { ran, refusal: outcome };
    expect(outcome.result).toMatchObject({ data: {} });
  }
  throw new Error(`${most + 1} operations, none refused`);
}

/** A GraphQL multipart upload of a small WAV file by `token`, from `ip`: the uploadFile result. */
async function graphqlUpload(ip: string, token: string) {
  const form = new FormData();
  const query = "mutation ($file: Upload!) { uploadFile(file: $file) { __typename ... on DomainError { code } } }";
  form.set("operations", JSON.stringify({ query, variables: { file: null } }));
  form.set("map", JSON.stringify({ 0: ["variables.file"] }));
  form.set("0", new Blob([new Uint8Array(wav())]), "x.wav");
  const encoded = new Response(form);
  const response = await limited.app.inject({
    method: "POST",
    url: "/graphql",
    remoteAddress: ip,
    headers: { "content-type": encoded.headers.get("content-type") ?? "", authorization: `Bearer ${token}` },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  return response.json().data.uploadFile;
}

/** A REST upload of a small WAV file by `token`, from `ip`. */
async function restUpload(ip: string, token: string): Promise<Answer> {
  const form = new FormData();
  form.set("name", "x.wav");
  form.set("file", new Blob([new Uint8Array(wav())]), "x.wav");
  const encoded = new Response(form);
  const response = await limited.app.inject({
    method: "POST",
    url: "/drive",
    remoteAddress: ip,
    headers: { "content-type": encoded.headers.get("content-type") ?? "", authorization: `Bearer ${token}` },
    payload: Buffer.from(await encoded.arrayBuffer()),
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
    expect((await restUpload("10.0.5.1", carol.token)).status).toBe(200);
    expect((await restUpload("10.0.5.1", carol.token)).status).toBe(200);
    expectLimited(await restUpload("10.0.5.1", carol.token));
  });

  it("count a route under /v0 with the route at / (one counter per limit, not per path)", async () => {
    const request = from("10.0.7.1");
    expect((await request("POST", "/v0/login", REST_LOGIN)).status).toBe(400);
    expectLimited(await request("POST", "/login", REST_LOGIN));
    expectLimited(await request("POST", "/login/", REST_LOGIN));
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

describe("rate limits through GraphQL: the same limits and counters as REST, per field", () => {
  it("refuse a login past the limit with DomainError RATE_LIMITED", async () => {
    expect(await graphql("10.1.0.1", logins(1))).toEqual({ l0: FAILED });
    expect(await graphql("10.1.0.1", logins(1))).toEqual({ l0: REFUSED });
    // Another address has its own allowance.
    expect(await graphql("10.1.0.2", logins(1))).toEqual({ l0: FAILED });
  });

  it("share one count with REST's POST /login, either way round", async () => {
    expect((await from("10.1.1.1")("POST", "/login", REST_LOGIN)).status).toBe(400);
    expect(await graphql("10.1.1.1", logins(1))).toEqual({ l0: REFUSED });

    expect(await graphql("10.1.1.2", logins(1))).toEqual({ l0: FAILED });
    expectLimited(await from("10.1.1.2")("POST", "/login", REST_LOGIN));
    expectLimited(await from("10.1.1.2")("POST", "/v0/login", REST_LOGIN));
  });

  it("count each occurrence of the field: two aliases count two", async () => {
    expect(await graphql("10.1.2.1", logins(2))).toEqual({ l0: FAILED, l1: REFUSED });
    expectLimited(await from("10.1.2.1")("POST", "/login", REST_LOGIN));
  });

  it("count registrations as REST does, and create nothing past the limit", async () => {
    const create = (alias: string, name: string) =>
      `${alias}: createAccount(input: { name: "${name}", email: "${name}@example.com", passphrase: "${PASSPHRASE}", captchaToken: "ok" }) { __typename ... on DomainError { code } }`;
    const data = await graphql("10.1.3.1", `mutation { ${create("a", "rl_gql_one")} ${create("b", "rl_gql_two")} }`);
    expect(data).toEqual({ a: { __typename: "MutationCreateAccountSuccess" }, b: REFUSED });
    expect(await limited.services.db.account.count({ where: { nameKey: "rl_gql_two" } })).toBe(0);
    const rest = {
      name: "rl_gql_three",
      email: "rl_gql_three@example.com",
      passphrase: PASSPHRASE,
      captcha_token: "ok",
    };
    expectLimited(await from("10.1.3.1")("POST", "/accounts", { body: rest }));

    // And the other way round: a REST registration spends GraphQL's allowance.
    expect((await from("10.1.3.2")("POST", "/accounts", { body: rest })).status).toBe(200);
    expect(await graphql("10.1.3.2", `mutation { ${create("a", "rl_gql_four")} }`)).toEqual({ a: REFUSED });
  });

  it("count passphrase reset requests like registration, with REST's", async () => {
    const reset = (alias: string) =>
      `${alias}: requestPassphraseReset(name: "rl_alice", captchaToken: "ok") { __typename ... on DomainError { code } }`;
    expect(await graphql("10.1.4.1", `mutation { ${reset("a")} ${reset("b")} }`)).toEqual({
      a: { __typename: "MutationRequestPassphraseResetSuccess" },
      b: REFUSED,
    });
    const rest = { body: { captcha_token: "ok" } };
    expectLimited(await from("10.1.4.1")("POST", "/accounts/rl_alice/reset_passphrase", rest));

    expect((await from("10.1.4.2")("POST", "/accounts/rl_alice/reset_passphrase", rest)).status).toBe(204);
    expect(await graphql("10.1.4.2", `mutation { ${reset("a")} }`)).toEqual({ a: REFUSED });
  });

  it("count uploads per account with REST's, and store nothing past the limit", async () => {
    const dave = await directAccount(limited, "rl_dave");
    const files = () => limited.services.db.driveFile.count({ where: { ownerId: BigInt(dave.id) } });
    expect((await restUpload("10.1.5.1", dave.token)).status).toBe(200);
    // From another address: uploads count per account.
    expect(await graphqlUpload("10.1.5.2", dave.token)).toEqual({ __typename: "MutationUploadFileSuccess" });
    expect(await graphqlUpload("10.1.5.3", dave.token)).toEqual(REFUSED);
    expectLimited(await restUpload("10.1.5.4", dave.token));
    expect(await files()).toBe(2);
  });

  it("count logins over WebSocket (graphql-ws) too", async () => {
    const socket = await overWs("127.0.0.1");
    try {
      expect(await socket.run(logins(1))).toEqual({ result: { data: { l0: FAILED } } });
      expect(await socket.run(logins(1))).toEqual({ result: { data: { l0: REFUSED } } });
    } finally {
      await socket.dispose();
    }
  });

  it("are off with RATE_LIMIT_MULTIPLIER=0: 40 logins in two documents, none refused", async () => {
    for (let round = 0; round < 2; round++) {
      const answer = await server.request("POST", "/graphql", { body: { query: logins(20) } });
      expect(answer.status).toBe(200);
      expect(Object.values(answer.body.data)).toEqual(Array(20).fill(FAILED));
    }
  });
});

describe("rate limits over WebSocket (graphql-ws): each operation is a request, on the same counters", () => {
  const CREATE_NOTE = `mutation { createNote(input: { content: "over the socket" }) { __typename ... on DomainError { code } } }`;
  const HOME = "{ homeTimeline { __typename } }";

  it("refuse an account's operations once HTTP has spent its budget, and do nothing of them", async () => {
    const frank = await directAccount(limited, "rl_ws_frank");
    const notes = () => limited.services.db.note.count({ where: { authorId: BigInt(frank.id) } });
    // Opened (its upgrade counted) and used while the budget lasts.
    const socket = await overWs("127.0.0.31", frank.token);
    try {
      expect(await socket.run(CREATE_NOTE)).toEqual({
        result: { data: { createNote: { __typename: "MutationCreateNoteSuccess" } } },
      });
      // The upgrade carried no credentials (they come in connection_init): it counted for its IP.
      let spent = 1;
      while ((await from("10.2.0.1")("GET", "/timeline/home", { token: frank.token })).status === 200) spent += 1;
      expect(spent).toBe(60);
      for (let i = 0; i < 3; i++) {
        expect(await socket.run(CREATE_NOTE)).toEqual(WS_REFUSED);
        expect(await socket.run(HOME)).toEqual(WS_REFUSED);
      }
      expect(await notes()).toBe(1);
    } finally {
      await socket.dispose();
    }
  });

  it("count an account's operations over the socket one by one, and then refuse its HTTP requests", async () => {
    const grace = await directAccount(limited, "rl_ws_grace");
    const socket = await overWs("127.0.0.32", grace.token);
    try {
      // 60 here, operations only: the upgrade counted for its IP.
      const { ran, refusal } = await untilRefused(socket, HOME, 60);
      expect(ran).toBe(60);
      expect(refusal).toEqual(WS_REFUSED);
      expectLimited(await from("10.2.1.1")("GET", "/timeline/home", { token: grace.token }));
      expectLimited(await from("10.2.1.1")("POST", "/graphql", { body: { query: HOME }, token: grace.token }));
    } finally {
      await socket.dispose();
    }
  });

  it("count an anonymous socket's operations against its IP's allowance", async () => {
    const socket = await overWs("127.0.0.33");
    try {
      // 12 here: the upgrade, then 11 operations.
      const { ran, refusal } = await untilRefused(socket, "{ globalTimeline { __typename } }", 12);
      expect(ran).toBe(11);
      expect(refusal).toEqual(WS_REFUSED);
      expectLimited(await from("127.0.0.33")("GET", "/timeline/global"));
      // Another address has its own allowance.
      expect((await from("127.0.0.34")("GET", "/timeline/global")).status).toBe(200);
    } finally {
      await socket.dispose();
    }
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
