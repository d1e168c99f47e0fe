// GraphQL subscriptions (docs/live.md#subscriptions) with real clients, across server processes on
// one database: graphql-sse (GraphQL over SSE, yoga's), an EventSource's GET, and graphql-ws
// (graphql-transport-ws over WebSocket). Each subscription is read on A while everything is written
// through B. C, with a small MAX_IN_FLIGHT, is shut down at the end.
import { randomBytes } from "node:crypto";
import type { ExecutionResult } from "graphql";
import { createClient as createSseClient, type NetworkError } from "graphql-sse";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type Instance, startInstance } from "./support/instances.ts";
import { run } from "./support/process.ts";
import { accountOn, call, type RemoteAccount } from "./support/remote.ts";
import { freshDatabase } from "./support/server.ts";
import { openSse } from "./support/sse.ts";

let a: Instance;
let b: Instance;
let c: Instance;
let env: Record<string, string>;
const cleanups: (() => unknown)[] = [];

// biome-ignore lint/suspicious/noExplicitAny: results are read field by field
type Result = ExecutionResult<any>;

/** A subscription as a client sees it: its results as they come, and whether (how) it ended. */
interface Subscription {
  results: Result[];
  completed: boolean;
  failed: unknown;
  /** Resolves once the server has answered (SSE: its headers came, so the stream is open). */
  connected: Promise<void>;
  until(condition: () => boolean, ms?: number): Promise<void>;
  stop(): void;
}

function collect() {
  let connect = () => {};
  const subscription: Subscription = {
    results: [],
    completed: false,
    failed: undefined,
    connected: new Promise<void>((resolve) => {
      connect = resolve;
    }),
    stop: () => {},
    async until(condition, ms = 5_000) {
      const deadline = Date.now() + ms;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`waited in vain (${JSON.stringify(subscription.results)})`);
        await sleep(25);
      }
    },
  };
  const sink = {
    next: (result: Result) => subscription.results.push(result),
    error: (err: unknown) => {
      subscription.failed = err;
      subscription.completed = true;
      connect();
    },
    complete: () => {
      subscription.completed = true;
      connect();
    },
  };
  return { subscription, sink, connect: () => connect() };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `query` over GraphQL over SSE (a POST per subscription, as graphql-sse does by default). */
function overSse(at: Instance, query: string, who?: RemoteAccount): Subscription {
  const { subscription, sink, connect } = collect();
  const client = createSseClient({
    url: `${at.url}/graphql`,
    headers: who ? { authorization: `Bearer ${who.token}` } : {},
    retryAttempts: 0,
    on: { connected: connect },
  });
  subscription.stop = client.subscribe({ query }, sink);
  cleanups.push(() => client.dispose());
  return subscription;
}

/**
 * `query` over WebSocket (graphql-transport-ws), credentials in connection_init's payload. The
 * protocol acknowledges no subscription, so `connected` is a pause long enough for it to open.
 */
function overWs(at: Instance, query: string, who?: RemoteAccount | { token: string }): Subscription {
  const { subscription, sink } = collect();
  const client = createWsClient({
    url: `${at.url.replace("http", "ws")}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: who ? { authorization: `Bearer ${who.token}` } : {},
    retryAttempts: 0,
  });
  subscription.stop = client.subscribe({ query }, sink);
  subscription.connected = sleep(1_000);
  cleanups.push(() => client.dispose());
  return subscription;
}

async function post(who: RemoteAccount, body: Record<string, unknown>) {
  const answer = await call(b, "POST", "/notes", body, who.token);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body as { id: string };
}

async function reply(who: RemoteAccount, to: { id: string }, content: string) {
  const answer = await call(b, "POST", `/notes/${to.id}/reply`, { content }, who.token);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { id: string };
}

const NOTE_FIELDS = "id content cwComment visibility createdAt author { name } replyTo { id content reactionCount }";

/** The note as a GraphQL query on A reads it, for comparison with what a subscription yielded. */
async function queried(id: string, who: RemoteAccount) {
  const response = await fetch(`${a.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${who.token}` },
    body: JSON.stringify({ query: `{ note(id: "${id}") { ... on QueryNoteSuccess { data { ${NOTE_FIELDS} } } } }` }),
  });
  return (await response.json()).data.note.data;
}

let alice: RemoteAccount;
let bob: RemoteAccount;

beforeAll(async () => {
  env = { DATABASE_URL: await freshDatabase(), TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") };
  [a, b, c] = await Promise.all([
    startInstance({ ...env, WORKER_ID: "21" }),
    startInstance({ ...env, WORKER_ID: "22" }),
    startInstance({ ...env, WORKER_ID: "23", MAX_IN_FLIGHT: "4" }),
  ]);
  [alice, bob] = await Promise.all([accountOn(b, "alice"), accountOn(b, "bob")]);
  expect((await call(b, "POST", "/accounts/alice/follow", {}, bob.token)).status).toBe(201);
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
});

describe("GraphQL over SSE (graphql-sse)", () => {
  it("homeTimeline and an anonymous globalTimeline yield a note posted through another instance, as a query reads it", async () => {
    const home = overSse(a, `subscription { homeTimeline { ${NOTE_FIELDS} } }`, bob);
    const global = overSse(a, "subscription { globalTimeline { id content author { name } } }");
    await Promise.all([home.connected, global.connected]);
    const note = await post(alice, { content: "live over SSE", cw_comment: "weather" });
    await home.until(() => home.results.length > 0);
    await global.until(() => global.results.length > 0);
    expect(home.results[0]).toEqual({ data: { homeTimeline: await queried(note.id, bob) } });
    expect(home.results[0].data.homeTimeline).toMatchObject({
      id: note.id,
      content: "live over SSE",
      cwComment: "weather",
      visibility: "public",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      author: { name: "@alice@localhost:3000" },
      replyTo: null,
    });
    expect(global.results[0]).toEqual({
      data: { globalTimeline: { id: note.id, content: "live over SSE", author: { name: "@alice@localhost:3000" } } },
    });
    home.stop();
    global.stop();
  });

  it("each event is resolved afresh: a second reply shows the note it replies to as it is now", async () => {
    const home = overSse(a, `subscription { homeTimeline { ${NOTE_FIELDS} } }`, bob);
    await home.connected;
    const original = await post(alice, { content: "original" });
    const first = await reply(alice, original, "first reply");
    await home.until(() => home.results.length >= 2);
    expect(home.results[1].data.homeTimeline).toMatchObject({
      id: first.id,
      replyTo: { id: original.id, content: "original", reactionCount: 0 },
    });
    expect((await call(b, "POST", `/notes/${original.id}/reaction`, { emoji: "👍" }, bob.token)).status).toBe(200);
    const second = await reply(alice, original, "second reply");
    await home.until(() => home.results.length >= 3);
    expect(home.results[2].data.homeTimeline).toMatchObject({
      id: second.id,
      replyTo: { id: original.id, reactionCount: 1 },
    });
    home.stop();
  });

  it("an EventSource's GET (no header at all, credentials in ?access_token=), as GraphiQL runs a subscription", async () => {
    const graphiql = await fetch(`${a.url}/graphql`, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(graphiql.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await graphiql.text()).toContain("Murmur GraphiQL");
    const query = (q: string) => `${a.url}/graphql?query=${encodeURIComponent(q)}`;
    const global = await openSse(query("subscription { globalTimeline { id content } }"));
    const home = await openSse(`${query("subscription { homeTimeline { id } }")}&access_token=${bob.token}`);
    cleanups.push(global.close, home.close);
    expect([global.status, home.status]).toEqual([200, 200]);
    expect(global.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const note = await post(alice, { content: "live over EventSource" });
    expect(await global.event(0)).toMatchObject({
      event: "next",
      data: JSON.stringify({ data: { globalTimeline: { id: note.id, content: "live over EventSource" } } }),
    });
    expect(JSON.parse((await home.event(0)).data)).toEqual({ data: { homeTimeline: { id: note.id } } });
  });

  it("refusals are errors with their code: no credentials (HTTP 401, as any GraphQL request), an unknown list", async () => {
    const anonymous = overSse(a, "subscription { homeTimeline { id } }");
    await anonymous.until(() => anonymous.completed);
    const response = (anonymous.failed as NetworkError).response as Response;
    expect([response.status, response.headers.get("www-authenticate")]).toEqual([401, "Bearer"]);
    const data = /^data: (.+)$/m.exec(await response.text())?.[1] ?? "";
    expect(JSON.parse(data).errors[0].extensions).toEqual({ code: "UNAUTHORIZED" });

    const unknownList = overSse(a, 'subscription { listTimeline(id: "123") { id } }', bob);
    await unknownList.until(() => unknownList.completed);
    expect(unknownList.failed).toBeUndefined();
    expect(unknownList.results).toHaveLength(1);
    expect(unknownList.results[0].errors?.[0]).toMatchObject({
      path: ["listTimeline"],
      extensions: { code: "LIST_NOTFOUND" },
    });
  });

  it("20 streams an account, whichever transport; one the client leaves is given back at once", async () => {
    const dave = await accountOn(b, "dave");
    expect((await call(b, "POST", "/accounts/alice/follow", {}, dave.token)).status).toBe(201);
    const twenty = Array.from({ length: 20 }, () => overSse(a, "subscription { homeTimeline { id } }", dave));
    await Promise.all(twenty.map((s) => s.connected));
    expect(twenty.every((s) => s.results.length === 0 && !s.completed)).toBe(true);
    const refused = overWs(a, "subscription { homeTimeline { id } }", dave);
    await refused.until(() => refused.completed);
    expect(refused.results[0].errors?.[0].extensions).toEqual({ code: "RATE_LIMITED" });
    // Left while no event came: a stream waiting for one must end all the same.
    for (const s of twenty) s.stop();
    let again = overSse(a, "subscription { homeTimeline { id } }", dave);
    const deadline = Date.now() + 5_000;
    for (;;) {
      await again.connected;
      await sleep(200);
      if (!again.completed) break;
      expect(again.results[0].errors?.[0].extensions).toEqual({ code: "RATE_LIMITED" });
      if (Date.now() > deadline) throw new Error("the streams left were not given back");
      again = overSse(a, "subscription { homeTimeline { id } }", dave);
    }
    const note = await post(alice, { content: "heard again" });
    await again.until(() => again.results.length > 0);
    expect(again.results[0]).toEqual({ data: { homeTimeline: { id: note.id } } });
    again.stop();
  });
});

describe("GraphQL over WebSocket (graphql-ws)", () => {
  it("listTimeline, over WebSocket and over SSE, yields a listed account's note", async () => {
    const list = await call(b, "POST", "/lists", { title: "birds" }, bob.token);
    expect((await call(b, "POST", `/lists/${list.body.id}`, { account_id: [alice.id] }, bob.token)).status).toBe(200);
    const query = `subscription { listTimeline(id: "${list.body.id}") { id content } }`;
    const ws = overWs(a, query, bob);
    const sse = overSse(a, query, bob);
    await Promise.all([ws.connected, sse.connected]);
    const note = await post(alice, { content: "live over WebSocket" });
    await ws.until(() => ws.results.length > 0);
    await sse.until(() => sse.results.length > 0);
    const expected = { data: { listTimeline: { id: note.id, content: "live over WebSocket" } } };
    expect(ws.results[0]).toEqual(expected);
    expect(sse.results[0]).toEqual(expected);
    ws.stop();
    sse.stop();
  });

  it("notifications yields a follow made through another instance", async () => {
    const erin = await accountOn(b, "erin");
    const notifications = overWs(
      a,
      "subscription { notifications { id type read actor { ... on AccountActor { account { id name } } } } }",
      alice,
    );
    await notifications.connected;
    expect((await call(b, "POST", "/accounts/alice/follow", {}, erin.token)).status).toBe(201);
    await notifications.until(() => notifications.results.length > 0);
    expect(notifications.results[0]).toEqual({
      data: {
        notifications: {
          id: expect.stringMatching(/^[1-9][0-9]*$/),
          type: "followed",
          read: false,
          actor: { account: { id: erin.id, name: "@erin@localhost:3000" } },
        },
      },
    });
    notifications.stop();
  });

  it("refusals are errors with their code, and nothing of HTTP: no credentials, a token that is no token", async () => {
    const anonymous = overWs(a, "subscription { notifications { id } }");
    const forged = overWs(a, "subscription { homeTimeline { id } }", { token: "not-a-token" });
    await anonymous.until(() => anonymous.completed);
    await forged.until(() => forged.completed);
    expect(anonymous.failed).toBeUndefined();
    expect(anonymous.results).toHaveLength(1);
    expect(anonymous.results[0].errors).toEqual([
      expect.objectContaining({ path: ["notifications"], extensions: { code: "UNAUTHORIZED" } }),
    ]);
    expect(forged.results[0].errors?.[0].extensions).toEqual({ code: "INVALID_TOKEN" });
  });

  it("a subscription completes when its account is frozen, over WebSocket and over SSE", async () => {
    const carol = await accountOn(b, "carol");
    const moderator = await accountOn(b, "moderator");
    expect((await run("src/cli/main.ts", ["role", "moderator", "moderator"], env)).code).toBe(0);
    const ws = overWs(a, "subscription { homeTimeline { id } }", carol);
    const sse = overSse(a, "subscription { notifications { id } }", carol);
    await Promise.all([ws.connected, sse.connected]);
    expect([ws.completed, sse.completed]).toEqual([false, false]);
    expect((await call(b, "PUT", "/accounts/carol/freeze", {}, moderator.token)).status).toBe(204);
    await ws.until(() => ws.completed);
    await sse.until(() => sse.completed);
    expect([ws.failed, sse.failed, ws.results, sse.results]).toEqual([undefined, undefined, [], []]);
  });
});

describe("an instance's subscriptions", () => {
  it("are no requests in flight: open ones, or WebSockets come and gone, leave room under MAX_IN_FLIGHT", async () => {
    // Opened one after another: what is asked is that open ones leave room. Six openings at once
    // are six requests in flight until each stream is open (the live hub opens them one at a
    // time, between its reads of the journal), which a bound of 4 may refuse on a busy machine.
    const open: Subscription[] = [];
    for (let i = 0; i < 6; i++) {
      open.push(overSse(c, "subscription { globalTimeline { id } }"));
      await open[i].connected;
    }
    for (let i = 0; i < 6; i++) {
      const client = createWsClient({
        url: `${c.url.replace("http", "ws")}/graphql`,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
      });
      await new Promise<void>((resolve, reject) =>
        client.subscribe({ query: "{ __typename }" }, { next: () => {}, error: reject, complete: resolve }),
      );
      await client.dispose();
    }
    expect((await fetch(`${c.url}/healthz`)).status).toBe(200);
    expect(open.every((s) => !s.completed)).toBe(true);
    for (const s of open) s.stop();
  });

  it("complete at shutdown, over SSE and over WebSocket, without holding it", async () => {
    const sse = overSse(c, "subscription { globalTimeline { id } }");
    const ws = overWs(c, "subscription { globalTimeline { id } }");
    await Promise.all([sse.connected, ws.connected]);
    const started = Date.now();
    await c.stop();
    expect(Date.now() - started).toBeLessThan(5_000);
    await sse.until(() => sse.completed);
    await ws.until(() => ws.completed);
    expect([sse.failed, ws.failed]).toEqual([undefined, undefined]);
    expect(c.output()).not.toMatch(/Internal error|shutdown took too long/);
  });
});
