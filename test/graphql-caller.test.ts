// The caller of a request is resolved once (src/http/caller.ts), whichever protocol serves it and
// however many parts of it read the caller: a GraphQL request with an Idempotency-Key, or one its
// compiled plan refuses and the executor answers, looked its account up two times.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallerCache } from "../src/domain/sessions/caller-cache.ts";
import { type CountingApp, countingApp } from "./support/counting.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let counting: CountingApp;
let alice: TestAccount;
/** How many times the counting app has resolved a caller's account (authenticate does once per call). */
let lookups = 0;

beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "caller_alice");
  // The server's own cache, each lookup counted on its way through.
  const real = server.services.callers;
  const callers = new Proxy(real, {
    get(target, name) {
      if (name === "get") {
        return (id: bigint) => {
          lookups++;
          return target.get(id);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as CallerCache;
  counting = await countingApp(server, { callers });
});
afterAll(async () => {
  await counting?.close();
  await server?.close();
});

/** The account lookups `request` made, and its answer. */
async function lookupsOf(request: () => Promise<{ statusCode: number; body: string }>) {
  const before = lookups;
  const answer = await request();
  return { lookups: lookups - before, status: answer.statusCode, body: answer.body };
}

function graphql(query: string, headers: Record<string, string> = {}) {
  return () =>
    counting.app.inject({
      method: "POST",
      url: "/graphql",
      headers: { "content-type": "application/json", authorization: `Bearer ${alice.token}`, ...headers },
      payload: JSON.stringify({ query }),
    });
}

describe("the caller", () => {
  it("is resolved once for a GraphQL mutation with an Idempotency-Key", async () => {
    const mutation = 'mutation { createNote(input: { content: "once" }) { __typename } }';
    const answer = await lookupsOf(graphql(mutation, { "idempotency-key": "caller-once" }));
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("MutationCreateNoteSuccess");
    expect(answer.lookups).toBe(1);
  });

  it("is resolved once for a page its compiled plan answers, and once for one the plan leaves to the executor", async () => {
    const page = "{ homeTimeline { __typename ... on NoteConnection { edges { cursor } } } }";
    expect((await lookupsOf(graphql(page))).lookups).toBe(1);
    expect((await lookupsOf(graphql(page))).lookups).toBe(1);
    // `first: 0` is refused: the plan gives up, and the executor answers the DomainError.
    const none = "{ homeTimeline(first: 0) { __typename ... on DomainError { code } } }";
    await lookupsOf(graphql(none));
    const refused = await lookupsOf(graphql(none));
    expect(refused.body).toContain("DomainError");
    expect(refused.lookups).toBe(1);
  });

  it("is resolved once for a REST request", async () => {
    const answer = await lookupsOf(() =>
      counting.app.inject({
        method: "GET",
        url: "/timeline/home",
        headers: { authorization: `Bearer ${alice.token}` },
      }),
    );
    expect(answer.status).toBe(200);
    expect(answer.lookups).toBe(1);
  });
});
