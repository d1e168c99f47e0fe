// Who follows an account, and whom it follows (CONTRACT 13): account summaries, newest follow
// first, 40 a page, before_id with the timelines' rules; a locked account's lists only for itself
// and its followers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { follow } from "./support/actions.ts";
import { account, directAccount, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let star: TestAccount;
const fans: TestAccount[] = [];

beforeAll(async () => {
  server = await startTestServer();
  star = await account(server, "star");
  for (let i = 0; i < 45; i++) {
    const fan = await directAccount(server, `fan${i}`);
    await follow(server, fan, star);
    fans.push(fan);
  }
}, 60_000);

afterAll(() => server?.close());

const ids = (answer: { body: { id: string }[] }) => answer.body.map((a) => a.id);

describe("GET /accounts/{name}/followers and /following", () => {
  it("pages followers newest follow first, 40 a page, as account summaries", async () => {
    const first = await server.request("GET", "/accounts/star/followers");
    expect(first.status).toBe(200);
    expect(ids(first)).toEqual(
      fans
        .slice(5)
        .reverse()
        .map((f) => f.id),
    );
    expect(Object.keys(first.body[0]).sort()).toEqual(["avatar", "id", "name", "nickname"]);
    const rest = await server.request("GET", `/accounts/star/followers?before_id=${first.body[39].id}`);
    expect(ids(rest)).toEqual(
      fans
        .slice(0, 5)
        .reverse()
        .map((f) => f.id),
    );
    const past = await server.request("GET", `/accounts/star/followers?before_id=${fans[0].id}`);
    expect([past.status, past.body]).toEqual([404, { error: "NOTHING_LEFT" }]);
    const following = await server.request("GET", "/accounts/fan3/following");
    expect(ids(following)).toEqual([star.id]);
    const unknown = await server.request("GET", "/accounts/nobody/followers");
    expect([unknown.status, unknown.body]).toEqual([404, { error: "ACCOUNT_NOT_FOUND" }]);
  });

  it("shows a locked account's lists to itself and its followers only", async () => {
    expect(
      (await server.request("PATCH", "/accounts/star", { token: star.token, body: { locked: true } })).status,
    ).toBe(200);
    const stranger = await directAccount(server, "stranger");
    for (const who of [undefined, stranger]) {
      const refused = await server.request("GET", "/accounts/star/following", { token: who?.token });
      expect([refused.status, refused.body]).toEqual([403, { error: "NO_PERMISSION" }]);
    }
    for (const who of [star, fans[7]]) {
      expect((await server.request("GET", "/accounts/star/followers", { token: who.token })).status).toBe(200);
    }
  });
});

describe("GraphQL followers and following", () => {
  it("pages the same accounts as REST", async () => {
    const answer = await server.request("POST", "/graphql", {
      token: fans[7].token,
      body: {
        query:
          '{ followers(name: "star", first: 3) { ... on AccountConnection { edges { node { id } } pageInfo { hasNextPage } } } following(name: "fan3") { ... on AccountConnection { edges { node { id } } } } }',
      },
    });
    expect(answer.body.data.followers.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      fans
        .slice(42)
        .reverse()
        .map((f) => f.id),
    );
    expect(answer.body.data.followers.pageInfo.hasNextPage).toBe(true);
    expect(answer.body.data.following.edges).toEqual([{ node: { id: star.id } }]);
  });
});
