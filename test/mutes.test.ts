// Mutes (docs/accounts.md#mutes): a muted account's notes leave the muter's feeds (home, both of
// its strategies, lists, conversations, search, home and list streams) but stay on the global
// timeline, the account's own timeline and by id; it causes the muter no notifications; nobody
// else can tell; unmuting restores all of it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { follow, post } from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { gql as graphql } from "./support/graphql.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openSse } from "./support/sse.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;
let listId: string;

beforeAll(async () => {
  server = await startTestServer();
  [alice, bob, carol] = [
    await account(server, "mu_alice"),
    await account(server, "mu_bob"),
    await account(server, "mu_carol"),
  ];
  await follow(server, alice, bob);
  await follow(server, alice, carol);
  const list = await server.request("POST", "/lists", { token: alice.token, body: { title: "birds" } });
  listId = list.body.id;
  const assigned = await server.request("POST", `/lists/${listId}`, {
    token: alice.token,
    body: { account_id: [bob.id, carol.id] },
  });
  expect(assigned.status).toBe(200);
  await post(server, bob, { content: "bob osprey" });
  await post(server, bob, { content: "bob osprey to alice", visibility: "direct", send_to: "mu_alice" });
  await post(server, carol, { content: "carol osprey" });
});
afterAll(() => server.close());

let address: string | undefined;
/** The server on a port, for streams (listening once for the whole file). */
async function listening(): Promise<string> {
  address ??= await server.app.listen({ port: 0, host: "127.0.0.1" });
  return address;
}

const contents = (body: { content: string }[]) => body.map((n) => n.content);

async function get(path: string, who: TestAccount | undefined = alice) {
  const answer = await server.request("GET", path, { token: who?.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

/** What alice's feeds hold of bob's and carol's notes, and what stays visible to her anyway. */
async function aliceSees() {
  const home = contents(await get("/timeline/home"));
  // Past 200 followees the home timeline is read by another statement (homeRule): the same rule.
  await server.services.db.account.update({ where: { id: BigInt(alice.id) }, data: { followingCount: 1000 } });
  const denseHome = contents(await get("/timeline/home"));
  await server.services.db.account.update({ where: { id: BigInt(alice.id) }, data: { followingCount: 2 } });
  return {
    home,
    denseHome,
    list: contents(await get(`/lists/${listId}/notes`)),
    conversations: (await get("/timeline/conversations")).map((c: { account: { accountName: string } }) =>
      c.account.accountName.replace(/^@|@.*$/g, ""),
    ),
    conversation: contents(await get(`/timeline/conversations/${bob.id}`)),
    search: contents(await get("/search/notes?query=osprey")),
    global: contents(await get("/timeline/global")),
    bobTimeline: contents(await get("/timeline/accounts/mu_bob")),
  };
}

async function mute(who: TestAccount, name: string, method: "POST" | "DELETE" = "POST") {
  return server.request(method, `/accounts/${name}/mute`, { token: who.token, body: {} });
}

describe("mute and unmute", () => {
  it("answer 204, idempotently; oneself is INVALID_REQUEST, an unknown account ACCOUNT_NOT_FOUND", async () => {
    for (const method of ["POST", "DELETE"] as const) {
      for (let i = 0; i < 2; i++)
        expect(await mute(alice, "mu_carol", method)).toMatchObject({ status: 204, body: "" });
      expect((await mute(alice, "mu_alice", method)).body).toEqual({ error: "INVALID_REQUEST" });
      expect((await mute(alice, "mu_alice", method)).status).toBe(400);
      const unknown = await mute(alice, "mu_nobody", method);
      expect([unknown.status, unknown.body]).toEqual([404, { error: "ACCOUNT_NOT_FOUND" }]);
      const anonymous = await server.request(method, "/accounts/mu_bob/mute", { body: {} });
      expect([anonymous.status, anonymous.body]).toEqual([401, { error: "UNAUTHORIZED" }]);
    }
    expect(await server.services.db.mute.count()).toBe(0);
  });

  it("takes the muted account's notes out of the muter's feeds only, until unmuted", async () => {
    const before = await aliceSees();
    expect(before).toEqual({
      home: ["carol osprey", "bob osprey"],
      denseHome: ["carol osprey", "bob osprey"],
      list: ["carol osprey", "bob osprey"],
      conversations: ["mu_bob"],
      conversation: ["bob osprey to alice"],
      search: ["carol osprey", "bob osprey to alice", "bob osprey"],
      global: ["carol osprey", "bob osprey"],
      bobTimeline: ["bob osprey"],
    });
    const bobSeesAlice = await get("/accounts/mu_alice", bob);
    expect((await mute(alice, "mu_bob")).status).toBe(204);
    expect(await aliceSees()).toEqual({
      home: ["carol osprey"],
      denseHome: ["carol osprey"],
      list: ["carol osprey"],
      conversations: [],
      conversation: [],
      search: ["carol osprey"],
      // Shown where asked for: the instance's public timeline, bob's own.
      global: ["carol osprey", "bob osprey"],
      bobTimeline: ["bob osprey"],
    });
    const [bobNote] = await get("/timeline/accounts/mu_bob");
    expect((await get(`/notes/${bobNote.id}`)).content).toBe("bob osprey");
    // Others' feeds are as they were.
    await follow(server, carol, bob);
    expect(contents(await get("/timeline/home", carol))).toEqual(["carol osprey", "bob osprey"]);
    // Nobody but alice can tell: bob sees alice as before.
    expect(await get("/accounts/mu_alice", bob)).toEqual(bobSeesAlice);
    expect((await mute(alice, "mu_bob", "DELETE")).status).toBe(204);
    expect(await aliceSees()).toEqual(before);
  });

  it("spares the muter every notification the muted account causes, and only those", async () => {
    const mine = await post(server, alice, { content: "alice's own" });
    const act = async (who: TestAccount, tag: string) => {
      await post(server, who, { content: `hello @mu_alice ${tag}` });
      await post(server, who, { content: `psst @mu_alice ${tag}`, visibility: "followers" });
      const reacted = await server.request("POST", `/notes/${mine.id}/reaction`, {
        token: who.token,
        body: { emoji: "👍" },
      });
      expect(reacted.status).toBe(200);
      await server.request("DELETE", `/notes/${mine.id}/reaction`, { token: who.token, body: {} });
      const renoted = await server.request("POST", `/notes/${mine.id}/renote`, { token: who.token, body: {} });
      expect(renoted.status).toBe(200);
      await server.request("DELETE", "/accounts/mu_alice/follow", { token: who.token, body: {} });
      await follow(server, who, alice);
    };
    const notified = async () => {
      const page = await get("/notifications?include_read=true&limit=50");
      return page.notifications.map((n: { type: string; actor: { account: { name: string } } }) =>
        [n.type, n.actor.account.name.replace(/^@|@.*$/g, "")].join(" "),
      );
    };
    await follow(server, bob, alice);
    const start = (await notified()).length;
    expect((await mute(alice, "mu_bob")).status).toBe(204);
    await act(bob, "muted");
    await act(carol, "not muted");
    const whileMuted = (await notified()).slice(0, -start || undefined);
    expect(whileMuted.some((n: string) => n.includes("mu_bob"))).toBe(false);
    expect(whileMuted.sort()).toEqual(
      ["followed", "mentioned", "mentioned", "reacted", "renoted"].map((type) => `${type} mu_carol`),
    );
    expect((await mute(alice, "mu_bob", "DELETE")).status).toBe(204);
    await act(bob, "unmuted");
    expect((await notified()).slice(0, 5).sort()).toEqual(
      ["followed", "mentioned", "mentioned", "reacted", "renoted"].map((type) => `${type} mu_bob`),
    );
  });
});

describe("streams", () => {
  it("a muted account's notes do not reach the muter's home and list streams, but its global stream", async () => {
    const address = await listening();
    const dan = await account(server, "mu_dan");
    await follow(server, dan, bob);
    await follow(server, dan, carol);
    const list = await server.request("POST", "/lists", { token: dan.token, body: { title: "live" } });
    await server.request("POST", `/lists/${list.body.id}`, {
      token: dan.token,
      body: { account_id: [bob.id, carol.id] },
    });
    expect((await mute(dan, "mu_bob")).status).toBe(204);
    const auth = { authorization: `Bearer ${dan.token}` };
    const streams = [
      await openSse(`${address}/streaming/home`, auth),
      await openSse(`${address}/streaming/lists/${list.body.id}`, auth),
      await openSse(`${address}/streaming/global`, auth),
    ];
    try {
      expect(streams.map((s) => s.status)).toEqual([200, 200, 200]);
      const bobLive = await post(server, bob, { content: "bob live" });
      await post(server, carol, { content: "carol live" });
      const first = await Promise.all(streams.map(async (s) => JSON.parse((await s.event(0)).data).content));
      expect(first).toEqual(["carol live", "carol live", "bob live"]);
      expect(JSON.parse((await streams[2].event(1)).data).content).toBe("carol live");
      // A resumed stream replays its timeline: without the muted account's note either.
      const resumed = await openSse(`${address}/streaming/home`, {
        ...auth,
        "last-event-id": (BigInt(bobLive.id) - 1n).toString(),
      });
      streams.push(resumed);
      expect(JSON.parse((await resumed.event(0)).data).content).toBe("carol live");
      expect(resumed.events.map((e) => JSON.parse(e.data).content)).toEqual(["carol live"]);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

describe("GraphQL", () => {
  const gql = (query: string, variables: Record<string, unknown>, who: TestAccount) =>
    graphql(server, query, variables, who);
  const MUTE = `mutation ($name: String!) {
    mute(name: $name) { __typename ... on MutationMuteSuccess { data } ... on DomainError { code } } }`;
  const UNMUTE = `mutation ($name: String!) {
    unmute(name: $name) { __typename ... on MutationUnmuteSuccess { data } ... on DomainError { code } } }`;
  const FEEDS = `query ($listId: ID!) { homeTimeline { ... on NoteConnection { edges { node { content } } } }
    searchNotes(query: "osprey") { ... on NoteConnection { edges { node { content } } } }
    listTimeline(listId: $listId) { ... on NoteConnection { edges { node { content } } } }
    conversation(name: "mu_bob") { ... on NoteConnection { edges { node { content } } } }
    conversations { ... on ConversationConnection { edges { node { account { name } } } } } }`;
  const feeds = async () => {
    const data = await gql(FEEDS, { listId }, alice);
    return [data.homeTimeline, data.searchNotes, data.listTimeline, data.conversation].map(
      (c: { edges: { node: { content: string } }[] }) =>
        c.edges.map((e) => e.node.content).filter((text) => text.includes("osprey")),
    );
  };
  const conversations = async () =>
    (await gql(FEEDS, { listId }, alice)).conversations.edges.map(
      (e: { node: { account: { name: string } } }) => e.node.account.name,
    );

  it("mute and unmute call the same service, with the same codes", async () => {
    expect(await feeds()).toEqual([
      ["carol osprey", "bob osprey"],
      ["carol osprey", "bob osprey to alice", "bob osprey"],
      ["carol osprey", "bob osprey"],
      ["bob osprey to alice"],
    ]);
    expect(await conversations()).toEqual(["@mu_bob@murmur.test"]);
    expect((await gql(MUTE, { name: "mu_bob" }, alice)).mute).toEqual({
      __typename: "MutationMuteSuccess",
      data: true,
    });
    expect(await feeds()).toEqual([["carol osprey"], ["carol osprey"], ["carol osprey"], []]);
    expect(await conversations()).toEqual([]);
    expect((await gql(MUTE, { name: "mu_nobody" }, alice)).mute).toEqual({
      __typename: "DomainError",
      code: "ACCOUNT_NOT_FOUND",
    });
    const anonymous = await server.request("POST", "/graphql", {
      body: { query: MUTE, variables: { name: "mu_bob" } },
    });
    expect([anonymous.status, anonymous.body.errors[0].extensions.code]).toEqual([401, "UNAUTHORIZED"]);
    expect((await gql(MUTE, { name: "mu_alice" }, alice)).mute).toEqual({
      __typename: "DomainError",
      code: "INVALID_REQUEST",
    });
    expect((await gql(UNMUTE, { name: "mu_nobody" }, alice)).unmute).toMatchObject({ code: "ACCOUNT_NOT_FOUND" });
    expect((await gql(UNMUTE, { name: "mu_bob" }, alice)).unmute).toMatchObject({ data: true });
    expect((await feeds())[0]).toEqual(["carol osprey", "bob osprey"]);
  });

  it("a muted account's notes skip the muter's homeTimeline subscription, and it causes no notifications", async () => {
    const base = await listening();
    const subscribe = (query: string) =>
      openSse(`${base}/graphql?query=${encodeURIComponent(query)}&access_token=${alice.token}`);
    expect((await gql(MUTE, { name: "mu_bob" }, alice)).mute).toMatchObject({ data: true });
    const home = await subscribe("subscription { homeTimeline { content } }");
    const notifications = await subscribe(
      "subscription { notifications { type actor { ... on AccountActor { account { name } } } } }",
    );
    try {
      expect([home.status, notifications.status]).toEqual([200, 200]);
      await post(server, bob, { content: "bob subscribed @mu_alice" });
      await post(server, carol, { content: "carol subscribed @mu_alice" });
      expect(JSON.parse((await home.event(0)).data)).toEqual({
        data: { homeTimeline: { content: "carol subscribed @mu_alice" } },
      });
      expect(JSON.parse((await notifications.event(0)).data)).toEqual({
        data: { notifications: { type: "mentioned", actor: { account: { name: "@mu_carol@murmur.test" } } } },
      });
      const listed = await gql(
        `{ notifications(first: 1) { ... on NotificationConnection { edges { node { type actor { ... on AccountActor { account { name } } } } } } } }`,
        {},
        alice,
      );
      expect(listed.notifications.edges[0].node).toEqual({
        type: "mentioned",
        actor: { account: { name: "@mu_carol@murmur.test" } },
      });
      // Carol's came after bob's: had bob's been sent, it would be first.
      expect([home.events.length, notifications.events.length]).toEqual([1, 1]);
    } finally {
      home.close();
      notifications.close();
      expect((await gql(UNMUTE, { name: "mu_bob" }, alice)).unmute).toMatchObject({ data: true });
    }
  });
});

describe("account deletion", () => {
  it("removes the mutes either account took part in", async () => {
    const eve = await account(server, "mu_eve");
    expect((await mute(eve, "mu_carol")).status).toBe(204);
    expect((await mute(carol, "mu_eve")).status).toBe(204);
    expect(
      await server.services.db.mute.count({
        where: { OR: [{ muterId: BigInt(eve.id) }, { mutedId: BigInt(eve.id) }] },
      }),
    ).toBe(2);
    await server.services.db.account.delete({ where: { id: BigInt(eve.id) } });
    expect(
      await server.services.db.mute.count({
        where: { OR: [{ muterId: BigInt(eve.id) }, { mutedId: BigInt(eve.id) }] },
      }),
    ).toBe(0);
  });
});
