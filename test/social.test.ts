// The social graph over REST (docs/accounts.md#follows, docs/accounts.md#follow-requests,
// docs/accounts.md#blocks, docs/notifications.md): follows, follow requests to locked accounts,
// blocks, and the notifications and announcements of GET /notifications.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAnnouncement } from "../src/domain/announcements/service.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { AccountSummaryShape, AnnouncementShape, expectShape, ISO_MS, NotificationShape } from "./support/shapes.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const qualified = (name: string) => `@${name}@${HOST}`;

function expectEmpty(answer: Answer, status = 204) {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: "" });
}

/** `alice.<tag>` and `bob.<tag>`: a fresh pair of named accounts for one test. */
async function aliceAndBob(tag: string): Promise<[TestAccount, TestAccount]> {
  return [await account(server, `alice.${tag}`), await account(server, `bob.${tag}`)];
}

const follow = (who: TestAccount | undefined, target: string, prefix = "") =>
  server.request("POST", `${prefix}/accounts/${target}/follow`, { token: who?.token, body: {} });
const unfollow = (who: TestAccount | undefined, target: string, prefix = "") =>
  server.request("DELETE", `${prefix}/accounts/${target}/follow`, { token: who?.token, body: {} });
const block = (who: TestAccount | undefined, target: string) =>
  server.request("POST", `/accounts/${target}/block`, { token: who?.token, body: {} });
const unblock = (who: TestAccount | undefined, target: string) =>
  server.request("DELETE", `/accounts/${target}/block`, { token: who?.token, body: {} });
const followRequests = (who: TestAccount | undefined) =>
  server.request("GET", "/follow_requests", { token: who?.token });
const answerRequest = (who: TestAccount | undefined, requester: string, verb: "accept" | "reject") =>
  server.request("POST", `/follow_requests/${requester}/${verb}`, { token: who?.token, body: {} });
const notifications = (who: TestAccount | undefined, query = "") =>
  server.request("GET", `/notifications${query}`, { token: who?.token });
const markRead = (who: TestAccount | undefined, id: string) =>
  server.request("POST", `/notifications/${id}/read`, { token: who?.token, body: {} });

async function lock(who: TestAccount): Promise<void> {
  const answer = await server.request("PATCH", `/accounts/${who.name}`, { token: who.token, body: { locked: true } });
  expect(answer.status).toBe(200);
}

async function publicView(name: string) {
  const answer = await server.request("GET", `/accounts/${name}`);
  expect(answer.status).toBe(200);
  return answer.body as {
    id: string;
    name: string;
    nickname: string;
    avatar: string;
    followed_count: number;
    following_count: number;
  };
}

/** followed_count and following_count of the public view. */
async function counts(who: TestAccount) {
  const view = await publicView(who.name);
  return { followed: view.followed_count, following: view.following_count };
}

/** The actor member of a notification caused by `who`, built from its public view. */
async function actorOf(who: TestAccount) {
  const view = await publicView(who.name);
  return {
    type: "account",
    account: { id: who.id, name: qualified(who.name), nickname: view.nickname, avatar: view.avatar },
  };
}

/** The caller's notifications (read ones too), newest first. */
async function notificationsOf(who: TestAccount) {
  const answer = await notifications(who, "?include_read=true");
  expect(answer.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
  return answer.body.notifications as any[];
}

/** Asserts one notification's exact shape: type, actor, id, createdAt, and nothing else. */
async function expectNotification(
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
  notification: any,
  type: string,
  actor: TestAccount,
) {
  expectShape(NotificationShape, notification);
  expect(notification).toEqual({
    id: expect.any(String),
    type,
    actor: await actorOf(actor),
    createdAt: expect.any(String),
  });
  expect(notification.id).toMatch(/^[1-9][0-9]{0,19}$/);
  expect(notification.createdAt).toMatch(ISO_MS);
  expectShape(AccountSummaryShape, notification.actor.account);
}

describe("POST /accounts/{name}/follow", () => {
  it("follows an unlocked account: 201 {pending:false}, and both public views count it", async () => {
    const [alice, bob] = await aliceAndBob("follow");
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    const answer = await follow(alice, bob.name);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: false } });
    expect(await counts(alice)).toEqual({ followed: 0, following: 1 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
  });

  it("gives the target a `followed` notification with the follower as actor", async () => {
    const [alice, bob] = await aliceAndBob("followednote");
    expect((await follow(alice, bob.name)).status).toBe(201);
    const list = await notificationsOf(bob);
    expect(list).toHaveLength(1);
    await expectNotification(list[0], "followed", alice);
    expect(await notificationsOf(alice)).toEqual([]);
  });

  it("refuses a second follow of the same account: 400 ALREADY_FOLLOWING, counts unchanged", async () => {
    const [alice, bob] = await aliceAndBob("twice");
    expect((await follow(alice, bob.name)).status).toBe(201);
    expectError(await follow(alice, bob.name), 400, "ALREADY_FOLLOWING");
    expect(await counts(alice)).toEqual({ followed: 0, following: 1 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect(await notificationsOf(bob)).toHaveLength(1);
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account, by name, qualified name and id", async () => {
    const alice = await account(server, "alice.unknown");
    expectError(await follow(alice, "nobody.here"), 404, "ACCOUNT_NOT_FOUND");
    expectError(await follow(alice, qualified("nobody.here")), 404, "ACCOUNT_NOT_FOUND");
    expectError(await follow(alice, "123456789012345678"), 404, "ACCOUNT_NOT_FOUND");
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
  });

  it("refuses to follow oneself: 400 INVALID_REQUEST, and no notification to oneself", async () => {
    const alice = await account(server, "alice.self");
    expectError(await follow(alice, alice.name), 400, "INVALID_REQUEST");
    expectError(await follow(alice, qualified(alice.name)), 400, "INVALID_REQUEST");
    expectError(await follow(alice, alice.id), 400, "INVALID_REQUEST");
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await notificationsOf(alice)).toEqual([]);
  });

  it("requires credentials: 401 UNAUTHORIZED without them, and nothing changes", async () => {
    const bob = await account(server, "bob.anon");
    expectUnauthorized(await follow(undefined, bob.name), "UNAUTHORIZED");
    expectUnauthorized(await unfollow(undefined, bob.name), "UNAUTHORIZED");
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
  });

  it("takes the qualified name and the account id in the path", async () => {
    const [alice, bob] = await aliceAndBob("paths");
    const carol = await account(server, "carol.paths");
    const byQualified = await follow(alice, qualified(bob.name));
    expect({ status: byQualified.status, body: byQualified.body }).toEqual({ status: 201, body: { pending: false } });
    const byId = await follow(alice, carol.id);
    expect({ status: byId.status, body: byId.body }).toEqual({ status: 201, body: { pending: false } });
    expect(await counts(alice)).toEqual({ followed: 0, following: 2 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect(await counts(carol)).toEqual({ followed: 1, following: 0 });
    // The same account under another spelling is the same follow.
    expectError(await follow(alice, bob.id), 400, "ALREADY_FOLLOWING");
    expectError(await follow(alice, qualified(carol.name)), 400, "ALREADY_FOLLOWING");
  });

  it("is served under /v0 as well", async () => {
    const [alice, bob] = await aliceAndBob("v0");
    const answer = await follow(alice, bob.name, "/v0");
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: false } });
    expectError(await follow(alice, bob.name, "/v0"), 400, "ALREADY_FOLLOWING");
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expectEmpty(await unfollow(alice, bob.name, "/v0"));
    expectError(await unfollow(alice, bob.name, "/v0"), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
  });

  it("is served with a trailing slash as well", async () => {
    const [alice, bob] = await aliceAndBob("slash");
    const answer = await server.request("POST", `/accounts/${bob.name}/follow/`, { token: alice.token, body: {} });
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: false } });
    const requests = await server.request("GET", "/v0/follow_requests/", { token: bob.token });
    expect({ status: requests.status, body: requests.body }).toEqual({ status: 200, body: [] });
    const page = await server.request("GET", "/v0/notifications/", { token: bob.token });
    expect(page.status).toBe(200);
    expect(page.body.notifications).toHaveLength(1);
    expectEmpty(await server.request("DELETE", `/v0/accounts/${bob.name}/follow/`, { token: alice.token, body: {} }));
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
  });

  it("lets exactly one of 20 concurrent follows of the same pair through; the rest get ALREADY_FOLLOWING", async () => {
    const [alice, bob] = await aliceAndBob("race");
    const answers = await Promise.all(Array.from({ length: 20 }, () => follow(alice, bob.name)));
    const created = answers.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    expect(created[0].body).toEqual({ pending: false });
    for (const a of answers.filter((a) => a.status !== 201)) expectError(a, 400, "ALREADY_FOLLOWING");
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect(await counts(alice)).toEqual({ followed: 0, following: 1 });
    expect(await notificationsOf(bob)).toHaveLength(1);
  });
});

describe("DELETE /accounts/{name}/follow", () => {
  it("unfollows: 204 empty, and both counts go back", async () => {
    const [alice, bob] = await aliceAndBob("unfollow");
    expect((await follow(alice, bob.name)).status).toBe(201);
    expectEmpty(await unfollow(alice, bob.name));
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    // Following again works once unfollowed.
    expect((await follow(alice, qualified(bob.name))).status).toBe(201);
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
  });

  it("refuses to unfollow an account not followed: 400 YOU_ARE_NOT_FOLLOW_ACCOUNT", async () => {
    const [alice, bob] = await aliceAndBob("notfollowing");
    expectError(await unfollow(alice, bob.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    // bob follows alice; that does not make alice a follower of bob.
    expect((await follow(bob, alice.name)).status).toBe(201);
    expectError(await unfollow(alice, bob.id), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expect(await counts(alice)).toEqual({ followed: 1, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 1 });
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account", async () => {
    const alice = await account(server, "alice.unfollowunknown");
    expectError(await unfollow(alice, "nobody.there"), 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("follow requests to locked accounts", () => {
  it("makes the follow pending: 201 {pending:true}, a followRequested notification, counts unchanged", async () => {
    const [alice, bob] = await aliceAndBob("locked");
    await lock(bob);
    const answer = await follow(alice, bob.name);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: true } });
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });

    const page = await notifications(bob);
    expect(page.status).toBe(200);
    expect(page.body.notifications).toHaveLength(1);
    await expectNotification(page.body.notifications[0], "followRequested", alice);
    expect(page.body.notifications[0]).not.toHaveProperty("noteId");
    expect(page.body.notifications[0]).not.toHaveProperty("content");
  });

  it("refuses a second follow while the request is pending: 400 ALREADY_FOLLOWING", async () => {
    const [alice, bob] = await aliceAndBob("pendingtwice");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectError(await follow(alice, bob.name), 400, "ALREADY_FOLLOWING");
    expectError(await follow(alice, bob.id), 400, "ALREADY_FOLLOWING");
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    expect(await notificationsOf(bob)).toHaveLength(1);
  });

  it("refuses a follow of a now-locked account already followed: 400 ALREADY_FOLLOWING", async () => {
    const [alice, bob] = await aliceAndBob("lockedlater");
    expect((await follow(alice, bob.name)).body).toEqual({ pending: false });
    await lock(bob);
    expectError(await follow(alice, bob.name), 400, "ALREADY_FOLLOWING");
    expect((await followRequests(bob)).body).toEqual([]);
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
  });

  it("lets exactly one of 20 concurrent follows of a locked account through, as one request", async () => {
    const [alice, bob] = await aliceAndBob("lockedrace");
    await lock(bob);
    const answers = await Promise.all(Array.from({ length: 20 }, () => follow(alice, bob.name)));
    const created = answers.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    expect(created[0].body).toEqual({ pending: true });
    for (const a of answers.filter((a) => a.status !== 201)) expectError(a, 400, "ALREADY_FOLLOWING");
    expect((await followRequests(bob)).body).toHaveLength(1);
    expect(await notificationsOf(bob)).toHaveLength(1);
  });

  it("lists incoming requests as [{id, name, nickname, avatar}], and none of one's own", async () => {
    const [alice, bob] = await aliceAndBob("list");
    const carol = await account(server, "carol.list");
    await lock(bob);
    const empty = await followRequests(bob);
    expect({ status: empty.status, body: empty.body }).toEqual({ status: 200, body: [] });
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expect((await follow(carol, bob.name)).body).toEqual({ pending: true });

    const answer = await followRequests(bob);
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(2);
    for (const entry of answer.body) expectShape(AccountSummaryShape, entry);
    // The order of requests is not documented: compared as a set.
    expect(answer.body).toEqual(
      expect.arrayContaining([(await actorOf(alice)).account, (await actorOf(carol)).account]),
    );
    // Outgoing requests are not listed to the requester.
    expect((await followRequests(alice)).body).toEqual([]);
  });

  it("requires credentials for the list, accept and reject: 401 UNAUTHORIZED", async () => {
    const [alice, bob] = await aliceAndBob("reqanon");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectUnauthorized(await followRequests(undefined), "UNAUTHORIZED");
    expectUnauthorized(await answerRequest(undefined, alice.name, "accept"), "UNAUTHORIZED");
    expectUnauthorized(await answerRequest(undefined, alice.name, "reject"), "UNAUTHORIZED");
    expect((await followRequests(bob)).body).toHaveLength(1);
  });

  it("accepts a request: 204, the requester now follows and gets `followAccepted`", async () => {
    const [alice, bob] = await aliceAndBob("accept");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectEmpty(await answerRequest(bob, alice.name, "accept"));
    expect(await counts(alice)).toEqual({ followed: 0, following: 1 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect((await followRequests(bob)).body).toEqual([]);

    const list = await notificationsOf(alice);
    expect(list).toHaveLength(1);
    await expectNotification(list[0], "followAccepted", bob);

    // Now a follower: following again is refused, unfollowing works.
    expectError(await follow(alice, bob.name), 400, "ALREADY_FOLLOWING");
    expectError(await answerRequest(bob, alice.name, "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectEmpty(await unfollow(alice, bob.name));
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
  });

  it("accepts by qualified name and by account id", async () => {
    const [alice, bob] = await aliceAndBob("acceptpaths");
    const carol = await account(server, "carol.acceptpaths");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expect((await follow(carol, bob.name)).body).toEqual({ pending: true });
    expectEmpty(await answerRequest(bob, qualified(alice.name), "accept"));
    expectEmpty(await answerRequest(bob, carol.id, "reject"));
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect(await counts(carol)).toEqual({ followed: 0, following: 0 });
  });

  it("rejects a request: 204, no follow, the request is gone, and a new request can be made", async () => {
    const [alice, bob] = await aliceAndBob("reject");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectEmpty(await answerRequest(bob, alice.name, "reject"));
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    expect((await followRequests(bob)).body).toEqual([]);
    expectError(await unfollow(alice, bob.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expectError(await answerRequest(bob, alice.name, "reject"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expect(await notificationsOf(alice)).toEqual([]);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
  });

  it("answers 404 FOLLOW_REQUEST_NOT_FOUND when there is no such request, or no such account", async () => {
    const [alice, bob] = await aliceAndBob("noreq");
    await lock(bob);
    expectError(await answerRequest(bob, alice.name, "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectError(await answerRequest(bob, alice.name, "reject"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectError(await answerRequest(bob, "nobody.at.all", "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectError(await answerRequest(bob, "nobody.at.all", "reject"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    // A request goes one way: the requester cannot accept its own request.
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectError(await answerRequest(alice, bob.name, "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectError(await answerRequest(alice, bob.name, "reject"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    expect((await followRequests(bob)).body).toHaveLength(1);
  });

  it("withdraws a pending request with DELETE follow: 204, then the request is gone", async () => {
    const [alice, bob] = await aliceAndBob("withdraw");
    await lock(bob);
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
    expectEmpty(await unfollow(alice, bob.name));
    expect((await followRequests(bob)).body).toEqual([]);
    expectError(await answerRequest(bob, alice.name, "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expectError(await unfollow(alice, bob.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    expect((await follow(alice, bob.name)).body).toEqual({ pending: true });
  });
});

describe("blocks", () => {
  it("blocks: 204 empty, and again 204 (idempotent)", async () => {
    const [alice, bob] = await aliceAndBob("block");
    expectEmpty(await block(alice, bob.name));
    expectEmpty(await block(alice, bob.name));
    expectEmpty(await block(alice, qualified(bob.name)));
    expectEmpty(await block(alice, bob.id));
  });

  it("ends follows both ways: every counter of both accounts back to 0", async () => {
    const [alice, bob] = await aliceAndBob("blockends");
    expect((await follow(alice, bob.name)).status).toBe(201);
    expect((await follow(bob, alice.name)).status).toBe(201);
    expect(await counts(alice)).toEqual({ followed: 1, following: 1 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 1 });
    expectEmpty(await block(alice, bob.name));
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
    expectError(await unfollow(alice, bob.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expectError(await unfollow(bob, alice.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    // A second block has nothing left to end: counters do not go below 0.
    expectEmpty(await block(alice, bob.name));
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 0 });
  });

  it("leaves the follows of third accounts alone", async () => {
    const [alice, bob] = await aliceAndBob("blockothers");
    const carol = await account(server, "carol.blockothers");
    expect((await follow(carol, alice.name)).status).toBe(201);
    expect((await follow(carol, bob.name)).status).toBe(201);
    expect((await follow(bob, alice.name)).status).toBe(201);
    expectEmpty(await block(alice, bob.name));
    expect(await counts(alice)).toEqual({ followed: 1, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    expect(await counts(carol)).toEqual({ followed: 0, following: 2 });
  });

  it("ends pending follow requests both ways", async () => {
    const [alice, bob] = await aliceAndBob("blockreqs");
    const carol = await account(server, "carol.blockreqs");
    await lock(alice);
    await lock(carol);
    // bob asks to follow alice; alice asks to follow carol; carol's other request stays.
    expect((await follow(bob, alice.name)).body).toEqual({ pending: true });
    expect((await follow(alice, carol.name)).body).toEqual({ pending: true });
    expect((await follow(bob, carol.name)).body).toEqual({ pending: true });
    expectEmpty(await block(alice, bob.name));
    expect((await followRequests(alice)).body).toEqual([]);
    expectError(await answerRequest(alice, bob.name, "accept"), 404, "FOLLOW_REQUEST_NOT_FOUND");
    expect((await followRequests(carol)).body).toHaveLength(2);

    // The blocker's own pending request to the blocked account ends too.
    expectEmpty(await block(carol, alice.name));
    expect((await followRequests(carol)).body).toEqual([(await actorOf(bob)).account]);
    expectError(await unfollow(alice, carol.name), 400, "YOU_ARE_NOT_FOLLOW_ACCOUNT");
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await counts(carol)).toEqual({ followed: 0, following: 0 });
  });

  it("refuses the blocked account's follow: 400 YOU_ARE_BLOCKED, locked blocker or not", async () => {
    const [alice, bob] = await aliceAndBob("blocked");
    expectEmpty(await block(alice, bob.name));
    expectError(await follow(bob, alice.name), 400, "YOU_ARE_BLOCKED");
    expectError(await follow(bob, qualified(alice.name)), 400, "YOU_ARE_BLOCKED");
    expectError(await follow(bob, alice.id), 400, "YOU_ARE_BLOCKED");
    await lock(alice);
    expectError(await follow(bob, alice.name), 400, "YOU_ARE_BLOCKED");
    expect((await followRequests(alice)).body).toEqual([]);
    expect(await counts(alice)).toEqual({ followed: 0, following: 0 });
    expect(await notificationsOf(alice)).toEqual([]);
  });

  it("lets the blocker follow the account it blocks", async () => {
    const [alice, bob] = await aliceAndBob("blockerfollows");
    expectEmpty(await block(alice, bob.name));
    const answer = await follow(alice, bob.name);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: false } });
    expect(await counts(alice)).toEqual({ followed: 0, following: 1 });
    expect(await counts(bob)).toEqual({ followed: 1, following: 0 });
    // The block still holds the other way.
    expectError(await follow(bob, alice.name), 400, "YOU_ARE_BLOCKED");
  });

  it("unblocks: 204 empty, then the formerly blocked account may follow again", async () => {
    const [alice, bob] = await aliceAndBob("unblock");
    expectEmpty(await block(alice, bob.name));
    expectError(await follow(bob, alice.name), 400, "YOU_ARE_BLOCKED");
    expectEmpty(await unblock(alice, bob.name));
    const answer = await follow(bob, alice.name);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 201, body: { pending: false } });
    expect(await counts(alice)).toEqual({ followed: 1, following: 0 });
    expect(await counts(bob)).toEqual({ followed: 0, following: 1 });
    // Unblocking an account not blocked is 204 too.
    expectEmpty(await unblock(alice, bob.name));
  });

  it("is one-sided: the blocked account unblocking changes nothing", async () => {
    const [alice, bob] = await aliceAndBob("onesided");
    expectEmpty(await block(alice, bob.name));
    expectEmpty(await unblock(bob, alice.name));
    expectError(await follow(bob, alice.name), 400, "YOU_ARE_BLOCKED");
  });

  it("refuses to block or unblock oneself (400 INVALID_REQUEST) and unknown accounts (404 ACCOUNT_NOT_FOUND)", async () => {
    const alice = await account(server, "alice.blockself");
    expectError(await block(alice, alice.name), 400, "INVALID_REQUEST");
    expectError(await block(alice, alice.id), 400, "INVALID_REQUEST");
    expectError(await unblock(alice, alice.name), 400, "INVALID_REQUEST");
    expectError(await block(alice, "nobody.blocked"), 404, "ACCOUNT_NOT_FOUND");
    expectError(await unblock(alice, "nobody.blocked"), 404, "ACCOUNT_NOT_FOUND");
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    const bob = await account(server, "bob.blockanon");
    expectUnauthorized(await block(undefined, bob.name), "UNAUTHORIZED");
    expectUnauthorized(await unblock(undefined, bob.name), "UNAUTHORIZED");
  });
});

describe("GET /notifications and POST /notifications/{id}/read", () => {
  /** bob followed by `n` accounts in turn; returns them in follow order. */
  async function followedBy(bob: TestAccount, tag: string, n: number): Promise<TestAccount[]> {
    const followers: TestAccount[] = [];
    for (let i = 0; i < n; i++) {
      const follower = await account(server, `fan${i}.${tag}`);
      expect((await follow(follower, bob.name)).status).toBe(201);
      followers.push(follower);
    }
    return followers;
  }

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    expectUnauthorized(await notifications(undefined), "UNAUTHORIZED");
    expectUnauthorized(await markRead(undefined, "123"), "UNAUTHORIZED");
  });

  it("answers {announcements, notifications}, notifications newest first", async () => {
    const bob = await account(server, "bob.order");
    const [first, second, third] = await followedBy(bob, "order", 3);
    const answer = await notifications(bob);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(["announcements", "notifications"]);
    expect(answer.body.notifications.map((n: { actor: { account: { id: string } } }) => n.actor.account.id)).toEqual([
      third.id,
      second.id,
      first.id,
    ]);
    for (const n of answer.body.notifications) expect(n.type).toBe("followed");
    const ids = answer.body.notifications.map((n: { id: string }) => BigInt(n.id));
    expect(ids[0] > ids[1] && ids[1] > ids[2]).toBe(true);
    const times = answer.body.notifications.map((n: { createdAt: string }) => Date.parse(n.createdAt));
    expect(times[0] >= times[1] && times[1] >= times[2]).toBe(true);
  });

  it("takes `limit` from 1 to 50 and gives the newest that many", async () => {
    const bob = await account(server, "bob.limit");
    const followers = await followedBy(bob, "limit", 3);
    const one = await notifications(bob, "?limit=1");
    expect(one.status).toBe(200);
    expect(one.body.notifications).toHaveLength(1);
    expect(one.body.notifications[0].actor.account.id).toBe(followers[2].id);
    const two = await notifications(bob, "?limit=2");
    expect(two.body.notifications.map((n: { actor: { account: { id: string } } }) => n.actor.account.id)).toEqual([
      followers[2].id,
      followers[1].id,
    ]);
    const fifty = await notifications(bob, "?limit=50");
    expect(fifty.status).toBe(200);
    expect(fifty.body.notifications).toHaveLength(3);
  });

  it.each([
    ["0", "limit=0"],
    ["51", "limit=51"],
    ["x", "limit=x"],
    ["-1", "limit=-1"],
    ["1.5", "limit=1.5"],
  ])("refuses limit=%s: 400 INVALID_REQUEST", async (_, query) => {
    const bob = await account(server, `bob.badlimit${query.replace(/[^0-9a-z]/g, "n")}`);
    expectError(await notifications(bob, `?${query}`), 400, "INVALID_REQUEST");
  });

  it("takes `after` as an ISO date: a past one keeps everything, a future one gives no notifications", async () => {
    const bob = await account(server, "bob.after");
    await followedBy(bob, "after", 2);
    const past = await notifications(bob, `?after=${new Date(Date.now() - 60 * 60 * 1000).toISOString()}`);
    expect(past.status).toBe(200);
    expect(past.body.notifications).toHaveLength(2);
    const day = await notifications(bob, "?after=2020-01-01");
    expect(day.status).toBe(200);
    expect(day.body.notifications).toHaveLength(2);
    const future = await notifications(bob, `?after=${new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString()}`);
    expect(future.status).toBe(200);
    expect(future.body.notifications).toEqual([]);
  });

  it.each([["yesterday"], ["not-a-date"], ["2024-13-45"]])("refuses after=%s: 400 INVALID_REQUEST", async (after) => {
    const bob = await account(server, `bob.badafter.${after.replace(/[^0-9a-z]/g, "")}`);
    expectError(await notifications(bob, `?after=${after}`), 400, "INVALID_REQUEST");
  });

  it("refuses include_read other than true or false: 400 INVALID_REQUEST", async () => {
    const bob = await account(server, "bob.badinclude");
    expectError(await notifications(bob, "?include_read=yes"), 400, "INVALID_REQUEST");
  });

  it("marks a notification read: 204; hidden by default, shown with include_read=true", async () => {
    const bob = await account(server, "bob.read");
    const [first, second] = await followedBy(bob, "read", 2);
    const before = await notifications(bob);
    expect(before.body.notifications).toHaveLength(2);
    const older = before.body.notifications[1];
    expect(older.actor.account.id).toBe(first.id);

    expectEmpty(await markRead(bob, older.id));
    const unread = await notifications(bob);
    expect(unread.body.notifications.map((n: { id: string }) => n.id)).toEqual([before.body.notifications[0].id]);
    expect(unread.body.notifications[0].actor.account.id).toBe(second.id);
    const explicitFalse = await notifications(bob, "?include_read=false");
    expect(explicitFalse.body.notifications).toEqual(unread.body.notifications);
    const all = await notifications(bob, "?include_read=true");
    expect(all.body.notifications).toEqual(before.body.notifications);
  });

  it("refuses another account's notification and unknown or garbage ids: 404 NOTIFICATION_NOT_FOUND", async () => {
    const [alice, bob] = await aliceAndBob("readother");
    expect((await follow(alice, bob.name)).status).toBe(201);
    const [notification] = await notificationsOf(bob);
    expectError(await markRead(alice, notification.id), 404, "NOTIFICATION_NOT_FOUND");
    expect((await notifications(bob)).body.notifications).toHaveLength(1);
    expectError(await markRead(bob, "123456789012345678"), 404, "NOTIFICATION_NOT_FOUND");
    expectError(await markRead(bob, "not-an-id"), 404, "NOTIFICATION_NOT_FOUND");
    expectError(await markRead(bob, "-1"), 404, "NOTIFICATION_NOT_FOUND");
    expectError(await markRead(bob, "99999999999999999999999"), 404, "NOTIFICATION_NOT_FOUND");
  });

  it("lists announcements with unread state per account; reading one hides it by default", async () => {
    const [alice, bob] = await aliceAndBob("announce");
    const created = await createAnnouncement(server.services, {
      type: "info",
      title: "Maintenance",
      description: "The service restarts tonight.",
    });
    const id = created.id.toString();
    const mine = (answer: Answer) => answer.body.announcements.filter((a: { id: string }) => a.id === id);

    const page = await notifications(alice);
    expect(page.status).toBe(200);
    const [entry] = mine(page);
    expectShape(AnnouncementShape, entry);
    expect(entry).toEqual({
      id,
      title: "Maintenance",
      description: "The service restarts tonight.",
      type: "info",
      createdAt: expect.stringMatching(ISO_MS),
      unread: true,
    });

    expectEmpty(await markRead(alice, id));
    expect(mine(await notifications(alice))).toEqual([]);
    expect(mine(await notifications(alice, "?include_read=true"))).toEqual([{ ...entry, unread: false }]);
    // Reading it twice is still 204.
    expectEmpty(await markRead(alice, id));

    // bob has not read it.
    expect(mine(await notifications(bob))).toEqual([entry]);
    expect(mine(await notifications(bob, "?include_read=true"))).toEqual([entry]);
  });

  it("lists announcements newest first, `warn` as well as `info`, and leaves them out after a future `after`", async () => {
    const bob = await account(server, "bob.announcements");
    const info = await createAnnouncement(server.services, { type: "info", title: "First", description: "one" });
    const warn = await createAnnouncement(server.services, { type: "warn", title: "Second", description: "two" });
    const page = await notifications(bob);
    const ids = page.body.announcements.map((a: { id: string }) => a.id);
    expect(ids.indexOf(warn.id.toString())).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(warn.id.toString())).toBeLessThan(ids.indexOf(info.id.toString()));
    expect(page.body.announcements[ids.indexOf(warn.id.toString())].type).toBe("warn");
    const future = await notifications(bob, `?after=${new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString()}`);
    expect(future.body).toEqual({ announcements: [], notifications: [] });
  });
});
