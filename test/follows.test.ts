// Who follows an account, and whom it follows (docs/accounts.md#followers): account summaries,
// newest follow first, 40 a page, before_id with the timelines' rules; a locked account's lists
// only for itself and its followers.
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

  it("orders by when the follow was made, not by account, and pages by it", async () => {
    // fan0 followed star first; now it follows fan44, then fan1: newer follows of older accounts.
    await follow(server, fans[0], fans[44]);
    await follow(server, fans[0], fans[1]);
    const following = await server.request("GET", "/accounts/fan0/following");
    expect(ids(following)).toEqual([fans[1].id, fans[44].id, star.id]);
    const rest = await server.request("GET", `/accounts/fan0/following?before_id=${fans[44].id}`);
    expect(ids(rest)).toEqual([star.id]);
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

  const FOLLOWS = `query ($name: String!, $first: Int, $after: String) {
    followers(name: $name, first: $first, after: $after) {
      __typename ... on AccountConnection { edges { node { id name nickname avatar } } pageInfo { hasNextPage endCursor } }
      ... on DomainError { code } }
    following(name: $name, first: $first, after: $after) {
      __typename ... on AccountConnection { edges { node { id } } pageInfo { endCursor } } ... on DomainError { code } } }`;
  const gql = async (variables: Record<string, unknown>, who?: TestAccount) => {
    const answer = await server.request("POST", "/graphql", { token: who?.token, body: { query: FOLLOWS, variables } });
    expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
    return answer.body.data;
  };
  const nodes = (connection: { edges: { node: { id: string } }[] }) => connection.edges.map((e) => e.node.id);

  it("refuses a locked account's lists to strangers and to nobody, NO_PERMISSION; unknown ACCOUNT_NOT_FOUND", async () => {
    // star is locked (above): itself and its followers see them.
    const stranger = await directAccount(server, "stranger2");
    for (const who of [undefined, stranger]) {
      expect(await gql({ name: "star" }, who)).toEqual({
        followers: { __typename: "DomainError", code: "NO_PERMISSION" },
        following: { __typename: "DomainError", code: "NO_PERMISSION" },
      });
    }
    const own = await gql({ name: "star", first: 40 }, star);
    expect(nodes(own.followers)).toEqual(
      fans
        .slice(5)
        .reverse()
        .map((f) => f.id),
    );
    expect(own.followers.edges[0].node).toEqual({
      id: fans[44].id,
      name: "@fan44@murmur.test",
      nickname: "fan44",
      avatar: expect.any(String),
    });
    expect(own.followers.pageInfo.hasNextPage).toBe(true);
    const next = await gql({ name: "star", first: 40, after: own.followers.pageInfo.endCursor }, star);
    expect(nodes(next.followers)).toEqual(
      fans
        .slice(0, 5)
        .reverse()
        .map((f) => f.id),
    );
    expect(await gql({ name: "star", first: 41 }, star)).toEqual({
      followers: { __typename: "DomainError", code: "INVALID_REQUEST" },
      following: { __typename: "DomainError", code: "INVALID_REQUEST" },
    });
    expect(await gql({ name: "nobody" })).toEqual({
      followers: { __typename: "DomainError", code: "ACCOUNT_NOT_FOUND" },
      following: { __typename: "DomainError", code: "ACCOUNT_NOT_FOUND" },
    });
  });

  it("orders by when the follow was made, and pages by it", async () => {
    const first = await gql({ name: "fan0", first: 2 });
    expect(nodes(first.following)).toEqual([fans[1].id, fans[44].id]);
    const rest = await gql({ name: "fan0", first: 2, after: first.following.pageInfo.endCursor });
    expect(nodes(rest.following)).toEqual([star.id]);
  });
});
