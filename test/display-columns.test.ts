// Display reads load accounts' public columns only: no answer that shows an account (an author,
// a notification's actor, a list's assignees, a conversation's partner, a follow requester, an
// account page) reads its passphrase hash from the database.
import { PrismaPg } from "@prisma/adapter-pg";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../src/db/client.ts";
import { PrismaClient } from "../src/generated/prisma/client.ts";
import { buildServer } from "../src/server.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let app: FastifyInstance;
let disconnect: () => Promise<void>;
let alice: TestAccount;
let bob: TestAccount;
let listId: string;
const statements: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "dc_alice");
  bob = await account(server, "dc_bob");
  await server.request("PATCH", "/accounts/dc_bob", { token: bob.token, body: { locked: true } });
  await server.request("POST", "/accounts/dc_alice/follow", { token: bob.token });
  await server.request("POST", "/accounts/dc_bob/follow", { token: alice.token });
  await server.request("POST", "/notes", {
    token: bob.token,
    body: { content: "hi @dc_alice", visibility: "direct", send_to: alice.id },
  });
  const list = await server.request("POST", "/lists", { token: alice.token, body: { title: "t", public: true } });
  listId = list.body.id;
  await server.request("POST", `/lists/${listId}`, { token: alice.token, body: { account_id: [bob.id] } });
  const db = new PrismaClient({
    adapter: new PrismaPg({ connectionString: server.databaseUrl }),
    log: [{ emit: "event", level: "query" }],
  });
  db.$on("query", (event) => statements.push(event.query));
  disconnect = () => db.$disconnect();
  app = await buildServer({ ...server.services, db: db as unknown as Db });
});

afterAll(async () => {
  await app?.close();
  await disconnect?.();
  await server?.close();
});

/** The SQL one request sends that reads `passphrase_hash`. */
async function hashReads(method: "GET" | "POST", url: string, who: TestAccount, payload?: unknown) {
  statements.length = 0;
  const answer = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${who.token}` },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
  expect(answer.statusCode, answer.body).toBeLessThan(300);
  return statements.filter((sql) => sql.includes("passphrase_hash"));
}

describe("display reads", () => {
  it.each([
    ["notifications (actor)", "GET", "/notifications", "alice"],
    ["a list (assignees)", "GET", "/lists/{list}", "alice"],
    ["an account's lists (assignees)", "GET", "/lists/accounts/dc_alice", "alice"],
    ["conversations (partner)", "GET", "/timeline/conversations", "alice"],
    ["home timeline (authors)", "GET", "/timeline/home", "alice"],
    ["follow requests (requester)", "GET", "/follow_requests", "bob"],
    ["an account page", "GET", "/accounts/dc_bob", "alice"],
  ] as const)("%s: no passphrase hash read", async (_what, method, url, who) => {
    const caller = who === "alice" ? alice : bob;
    // Once to let authentication read and cache the caller (not a display read), then measured.
    await hashReads(method, url.replace("{list}", listId), caller);
    expect(await hashReads(method, url.replace("{list}", listId), caller)).toEqual([]);
  });

  it("a new note's author and the viewer's own account (GraphQL viewer) carry no hash", async () => {
    await hashReads("GET", "/timeline/home", alice);
    expect(await hashReads("POST", "/notes", alice, { content: "new" })).toEqual([]);
    expect(
      await hashReads("POST", "/graphql", alice, {
        query: "{ viewer { ... on QueryViewerSuccess { data { id name } } } }",
      }),
    ).toEqual([]);
  });
});
