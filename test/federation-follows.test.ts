// Follows and blocks across servers (docs/federation.md#follows): two Murmur servers on different
// hosts (127.0.0.3 is A, 127.0.0.2 is B), each delivering through its own queue. Every follow of a
// remote account is pending until its server's Accept; a locked account's server answers when its
// owner does (Accept, Reject); Undo(Follow) and Block cross too. Each outcome is read through REST on
// both sides, with a bounded wait: delivery and the handling of what arrives are asynchronous.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, listening } from "./support/federation.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import type { TestServer } from "./support/server.ts";

const WAIT = { timeout: 15_000, interval: 50 };

let a: TestServer;
let b: TestServer;
let aHost: string;
let bHost: string;
let alice: TestAccount;
let erin: TestAccount;
let bob: TestAccount;
let carol: TestAccount;
let dave: TestAccount;

beforeAll(async () => {
  [a, b] = await Promise.all([listening("127.0.0.3"), listening("127.0.0.2")]);
  aHost = a.services.config.localHost;
  bHost = b.services.config.localHost;
  [{ alice, bob: erin }, { bob, alice: carol, stranger: dave }] = await Promise.all([
    cast(a, { alice: "alice", bob: "erin" }),
    cast(b, { bob: "bob", alice: "carol", stranger: "dave" }),
  ]);
  for (const locked of [carol, dave]) {
    const answer = await b.request("PATCH", `/accounts/${locked.name}`, {
      token: locked.token,
      body: { locked: true },
    });
    expect(answer.status).toBe(200);
  }
}, 30_000);

afterAll(async () => {
  for (const server of [a, b]) {
    await closeFederating(server);
  }
});

/** `who` on `server` acts on `name` (`follow` is POST or DELETE .../follow, and so on). */
async function act(server: TestServer, who: TestAccount, method: string, path: string) {
  const answer = await server.request(method, path, { token: who.token, body: method === "DELETE" ? undefined : {} });
  expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
  return answer.body;
}

/** The qualified names of `name`'s followers or followings on `server`, as `who` reads them. */
async function listed(server: TestServer, who: TestAccount, name: string, side: "followers" | "following") {
  const answer = await server.request("GET", `/accounts/${name}/${side}`, { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { name: string }[]).map((account) => account.name).sort();
}

async function counts(server: TestServer, name: string) {
  const { followed_count, following_count } = (await server.request("GET", `/accounts/${name}`)).body;
  return { followers: followed_count, following: following_count };
}

async function requests(server: TestServer, who: TestAccount) {
  const answer = await server.request("GET", "/follow_requests", { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { name: string }[]).map((account) => account.name);
}

describe("follows across servers", () => {
  it("of an unlocked account: pending until the Accept arrives, then listed and counted on both sides", async () => {
    expect(await act(a, alice, "POST", `/accounts/@bob@${bHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => listed(b, bob, "bob", "followers"), WAIT).toEqual([`@alice@${aHost}`]);
    await expect.poll(() => listed(a, alice, "alice", "following"), WAIT).toEqual([`@bob@${bHost}`]);
    expect(await counts(a, "alice")).toMatchObject({ following: 1 });
    expect(await counts(b, "bob")).toMatchObject({ followers: 1 });
    // Followed already: as for a local account.
    const again = await a.request("POST", `/accounts/@bob@${bHost}/follow`, { token: alice.token, body: {} });
    expect(again.body).toEqual({ error: "ALREADY_FOLLOWING" });

    // And the other way, from B.
    expect(await act(b, bob, "POST", `/accounts/@alice@${aHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => listed(b, bob, "bob", "following"), WAIT).toEqual([`@alice@${aHost}`]);
    expect(await listed(a, alice, "alice", "followers")).toEqual([`@bob@${bHost}`]);
    expect(await counts(a, "alice")).toEqual({ followers: 1, following: 1 });
  });

  it("of a locked account: a follow request there, a follow on both sides once its owner accepts", async () => {
    expect(await act(a, alice, "POST", `/accounts/@carol@${bHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => requests(b, carol), WAIT).toEqual([`@alice@${aHost}`]);
    // Not followed before the Accept: listed nowhere.
    expect(await listed(a, alice, "alice", "following")).toEqual([`@bob@${bHost}`]);
    await act(b, carol, "POST", `/follow_requests/@alice@${aHost}/accept`);
    await expect.poll(() => listed(a, alice, "alice", "following"), WAIT).toEqual([`@bob@${bHost}`, `@carol@${bHost}`]);
    expect(await listed(b, carol, "carol", "followers")).toEqual([`@alice@${aHost}`]);
    expect(await a.services.db.followRequest.count()).toBe(0);
  });

  it("refused: the Reject removes the request, and the account may ask again", async () => {
    expect(await act(a, alice, "POST", `/accounts/@dave@${bHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => requests(b, dave), WAIT).toEqual([`@alice@${aHost}`]);
    expect(await a.services.db.followRequest.count()).toBe(1);
    await act(b, dave, "POST", `/follow_requests/@alice@${aHost}/reject`);
    await expect.poll(() => a.services.db.followRequest.count(), WAIT).toBe(0);
    expect(await listed(a, alice, "alice", "following")).not.toContain(`@dave@${bHost}`);
    expect(await act(a, alice, "POST", `/accounts/@dave@${bHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => requests(b, dave), WAIT).toEqual([`@alice@${aHost}`]);
  });

  it("withdrawn: Undo(Follow) removes the request there, and an unfollow the follow", async () => {
    await act(a, alice, "DELETE", `/accounts/@dave@${bHost}/follow`);
    await expect.poll(() => requests(b, dave), WAIT).toEqual([]);

    await act(a, alice, "DELETE", `/accounts/@carol@${bHost}/follow`);
    await expect.poll(() => listed(b, carol, "carol", "followers"), WAIT).toEqual([]);
    expect(await counts(b, "carol")).toMatchObject({ followers: 0 });
    expect(await listed(a, alice, "alice", "following")).toEqual([`@bob@${bHost}`]);
  });

  it("a local block of a remote account ends the follows both ways on both servers", async () => {
    await act(a, alice, "POST", `/accounts/@bob@${bHost}/block`);
    expect(await listed(a, alice, "alice", "followers")).toEqual([]);
    expect(await listed(a, alice, "alice", "following")).toEqual([]);
    await expect.poll(() => listed(b, bob, "bob", "followers"), WAIT).toEqual([]);
    expect(await listed(b, bob, "bob", "following")).toEqual([]);
    expect(await counts(b, "bob")).toEqual({ followers: 0, following: 0 });
    // B knows bob is blocked: he cannot follow alice again.
    const refused = await b.request("POST", `/accounts/@alice@${aHost}/follow`, { token: bob.token, body: {} });
    expect(refused.body).toEqual({ error: "YOU_ARE_BLOCKED" });
  });

  it("a remote block ends the follows both ways here", async () => {
    await act(a, erin, "POST", `/accounts/@bob@${bHost}/follow`);
    await act(b, bob, "POST", `/accounts/@erin@${aHost}/follow`);
    await expect.poll(() => listed(a, erin, "erin", "followers"), WAIT).toEqual([`@bob@${bHost}`]);
    await expect.poll(() => listed(a, erin, "erin", "following"), WAIT).toEqual([`@bob@${bHost}`]);
    await act(b, bob, "POST", `/accounts/@erin@${aHost}/block`);
    await expect.poll(() => listed(a, erin, "erin", "followers"), WAIT).toEqual([]);
    expect(await listed(a, erin, "erin", "following")).toEqual([]);
    expect(await counts(a, "erin")).toEqual({ followers: 0, following: 0 });
  });

  it("to a locked account of this server from another is a request here; its acceptance reaches the follower", async () => {
    const frank = await account(a, "frank");
    await a.request("PATCH", "/accounts/frank", { token: frank.token, body: { locked: true } });
    expect(await act(b, carol, "POST", `/accounts/@frank@${aHost}/follow`)).toEqual({ pending: true });
    await expect.poll(() => requests(a, frank), WAIT).toEqual([`@carol@${bHost}`]);
    await act(a, frank, "POST", `/follow_requests/@carol@${bHost}/accept`);
    await expect.poll(() => listed(b, carol, "carol", "following"), WAIT).toEqual([`@frank@${aHost}`]);
    expect(await listed(a, frank, "frank", "followers")).toEqual([`@carol@${bHost}`]);
  });
});
