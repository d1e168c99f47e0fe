// GraphQL subscriptions (CONTRACT 12, issue 18) with real clients, across two server processes on
// one database: graphql-sse (GraphQL over SSE, yoga's) and graphql-ws (graphql-transport-ws over
// WebSocket). Each subscription is read on A while everything is written through B.
import { randomBytes } from "node:crypto";
import type { ExecutionResult } from "graphql";
import { createClient as createSseClient } from "graphql-sse";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { mailedToken } from "./support/fixtures.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { run } from "./support/process.ts";
import { freshDatabase } from "./support/server.ts";

let a: Instance;
let b: Instance;
let env: Record<string, string>;

interface Account {
  id: string;
  token: string;
}

async function call(at: Instance, method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${at.url}${url}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function accountOn(at: Instance, name: string): Promise<Account> {
  const passphrase = "correct-horse-battery";
  const email = `${name}@example.com`;
  const registered = await call(at, "POST", "/accounts", { name, email, passphrase, captcha_token: "ok" });
  expect((await call(at, "POST", `/accounts/${name}/verify_email`, { token: mailedToken(at, email) })).status).toBe(
    204,
  );
  const login = await call(at, "POST", "/login", { name, passphrase, captcha_token: "ok" });
  return { id: registered.body.id, token: login.body.authorization_token };
}

// biome-ignore lint/suspicious/noExplicitAny: results are read field by field
type Result = ExecutionResult<any>;

/** A subscription's results as they come, and whether it completed. */
function collect() {
  const results: Result[] = [];
  let completed = false;
  let failed: unknown;
  return {
    results,
    sink: {
      next: (result: Result) => results.push(result),
      error: (err: unknown) => {
        failed = err;
        completed = true;
      },
      complete: () => {
        completed = true;
      },
    },
    get completed() {
      return completed;
    },
    get failed() {
      return failed;
    },
    async until(condition: () => boolean, ms = 5_000) {
      const deadline = Date.now() + ms;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`waited in vain (${JSON.stringify(results)})`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

const sse = (token?: string) =>
  createSseClient({
    url: () => `${a.url}/graphql`,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
  });
const ws = (token?: string) =>
  createWsClient({
    url: `${a.url.replace("http", "ws")}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
  });

const post = async (who: Account, body: Record<string, unknown>) => {
  const answer = await call(b, "POST", "/notes", body, who.token);
  expect(answer.status).toBe(201);
  return answer.body as { id: string };
};

let alice: Account;
let bob: Account;

beforeAll(async () => {
  env = { DATABASE_URL: await freshDatabase(), TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") };
  [a, b] = await Promise.all([startInstance({ ...env, WORKER_ID: "21" }), startInstance({ ...env, WORKER_ID: "22" })]);
  [alice, bob] = await Promise.all([accountOn(b, "alice"), accountOn(b, "bob")]);
  expect((await call(b, "POST", "/accounts/alice/follow", {}, bob.token)).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

describe("GraphQL over SSE (graphql-sse)", () => {
  it("homeTimeline and an anonymous globalTimeline hear a note posted through another instance", async () => {
    const client = sse(bob.token);
    const anonymous = sse();
    const home = collect();
    const global = collect();
    const stopHome = client.subscribe(
      { query: "subscription { homeTimeline { id content author { name } } }" },
      home.sink,
    );
    const stopGlobal = anonymous.subscribe({ query: "subscription { globalTimeline { id content } }" }, global.sink);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const note = await post(alice, { content: "live over SSE" });
    await home.until(() => home.results.length > 0);
    await global.until(() => global.results.length > 0);
    expect(home.results[0].data?.homeTimeline).toEqual({
      id: note.id,
      content: "live over SSE",
      author: { name: "@alice@localhost:3000" },
    });
    expect(global.results[0].data?.globalTimeline).toEqual({ id: note.id, content: "live over SSE" });
    stopHome();
    stopGlobal();
  }, 30_000);

  it("refusals are errors with their code: no credentials, an unknown list", async () => {
    const noCredentials = collect();
    sse().subscribe({ query: "subscription { homeTimeline { id } }" }, noCredentials.sink);
    await noCredentials.until(() => noCredentials.completed);
    // Missing credentials are HTTP 401 with WWW-Authenticate, as for any GraphQL request.
    expect((noCredentials.failed as { response?: Response }).response?.status).toBe(401);
    const unknownList = collect();
    sse(bob.token).subscribe({ query: 'subscription { listTimeline(id: "123") { id } }' }, unknownList.sink);
    await unknownList.until(() => unknownList.completed);
    expect(JSON.stringify(unknownList.results)).toContain("LIST_NOTFOUND");
  }, 30_000);
});

describe("GraphQL over WebSocket (graphql-ws)", () => {
  it("listTimeline (and over SSE too) and notifications hear what happens through another instance", async () => {
    const list = await call(b, "POST", "/lists", { title: "birds" }, bob.token);
    expect((await call(b, "POST", `/lists/${list.body.id}`, { account_id: [alice.id] }, bob.token)).status).toBe(200);
    const client = ws(bob.token);
    const viaSse = collect();
    sse(bob.token).subscribe(
      { query: `subscription { listTimeline(id: "${list.body.id}") { id content } }` },
      viaSse.sink,
    );
    const listed = collect();
    const notified = collect();
    client.subscribe({ query: `subscription { listTimeline(id: "${list.body.id}") { id content } }` }, listed.sink);
    const aliceClient = ws(alice.token);
    aliceClient.subscribe(
      { query: "subscription { notifications { type actor { ... on AccountActor { account { name } } } } }" },
      notified.sink,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const note = await post(alice, { content: "live over WebSocket" });
    await listed.until(() => listed.results.length > 0);
    await viaSse.until(() => viaSse.results.length > 0);
    expect(viaSse.results[0].data?.listTimeline).toEqual({ id: note.id, content: "live over WebSocket" });
    expect(listed.results[0].data?.listTimeline, JSON.stringify(listed.results)).toEqual({
      id: note.id,
      content: "live over WebSocket",
    });
    expect((await call(b, "POST", `/notes/${note.id}/reaction`, { emoji: "👍" }, bob.token)).status).toBe(200);
    await notified.until(() => notified.results.length > 0);
    expect(notified.results[0].data?.notifications, JSON.stringify(notified.results)).toEqual({
      type: "reacted",
      actor: { account: { name: "@bob@localhost:3000" } },
    });
    await client.dispose();
    await aliceClient.dispose();
  }, 30_000);

  it("a subscription completes when its account is frozen", async () => {
    const carol = await accountOn(b, "carol");
    const moderator = await accountOn(b, "moderator");
    expect((await run("src/cli/main.ts", ["role", "moderator", "moderator"], env)).code).toBe(0);
    const client = ws(carol.token);
    const home = collect();
    client.subscribe({ query: "subscription { homeTimeline { id } }" }, home.sink);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await call(b, "PUT", "/accounts/carol/freeze", {}, moderator.token)).status).toBe(204);
    await home.until(() => home.completed);
    await client.dispose();
  }, 30_000);
});
