// Lists whose size others decide are bounded in every answer (issue 16): a list shows at most 100
// assignees with `assignee_count`, and GET /lists/{id}/assignees pages all of them, 100 a page,
// by account id newest first, with timelines' paging rules; GET /follow_requests pages the same
// way (it had cut at 1,000 with no way to the rest).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const MEMBERS = 230;

let server: TestServer;
let owner: TestAccount;
let other: TestAccount;
let listId: string;
let privateId: string;
/** The members' ids, newest first. */
let members: bigint[];

/** The ids of every page of `path` (100 at most each), by before_id until 404 NOTHING_LEFT. */
async function everyPage(path: string, who: TestAccount): Promise<string[]> {
  const seen: string[] = [];
  let before: string | undefined;
  for (;;) {
    const answer = await server.request("GET", `${path}${before ? `?before_id=${before}` : ""}`, { token: who.token });
    if (before && answer.status === 404) {
      expectError(answer, 404, "NOTHING_LEFT");
      return seen;
    }
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBeLessThanOrEqual(100);
    seen.push(...answer.body.map((a: { id: string }) => a.id));
    before = answer.body.at(-1).id;
  }
}

beforeAll(async () => {
  server = await startTestServer();
  [owner, other] = await Promise.all([account(server, "owner"), account(server, "other")]);
  const db = server.services.db;
  const ids = Array.from({ length: MEMBERS }, () => server.services.ids.next());
  await db.account.createMany({
    data: ids.map((id, i) => ({
      id,
      name: `member${i}`,
      nameKey: `member${i}`,
      email: `member${i}@example.com`,
      emailKey: `member${i}@example.com`,
      nickname: `member${i}`,
      passphraseHash: "!",
      verified: true,
    })),
  });
  const create = async (title: string, open: boolean) =>
    (await server.request("POST", "/lists", { token: owner.token, body: { title, public: open } })).body.id;
  listId = await create("big", true);
  privateId = await create("hidden", false);
  await db.listMember.createMany({ data: ids.map((accountId) => ({ listId: BigInt(listId), accountId })) });
  members = [...ids].sort((a, b) => (a > b ? -1 : 1));
});
afterAll(() => server?.close());

describe("a list of 230 accounts", () => {
  it("shows its newest 100 assignees and how many it has, wherever it is returned", async () => {
    const answers = [
      (await server.request("GET", `/lists/${listId}`)).body,
      (await server.request("PATCH", `/lists/${listId}`, { token: owner.token, body: { title: "bigger" } })).body,
      (await server.request("GET", `/lists/accounts/${owner.id}`, { token: other.token })).body[0],
    ];
    for (const list of answers) {
      expect(list.assignee_count).toBe(MEMBERS);
      expect(list.assignees.map((a: { id: string }) => a.id)).toEqual(members.slice(0, 100).map(String));
    }
  });

  it("pages every assignee, 100 a page, then 404 NOTHING_LEFT", async () => {
    const seen = await everyPage(`/lists/${listId}/assignees`, other);
    expect(seen).toEqual(members.map(String));
  });

  it("a private list's assignees are its owner's alone; an empty list answers []", async () => {
    expect((await server.request("GET", `/lists/${privateId}/assignees`, { token: owner.token })).body).toEqual([]);
    expectError(
      await server.request("GET", `/lists/${privateId}/assignees`, { token: other.token }),
      404,
      "LIST_NOTFOUND",
    );
    expectError(
      await server.request("GET", `/lists/123456789/assignees`, { token: other.token }),
      404,
      "LIST_NOTFOUND",
    );
    expectUnauthorized(await server.request("GET", `/lists/${listId}/assignees`), "UNAUTHORIZED");
  });

  it("GraphQL says how many and shows at most 100", async () => {
    const answer = await server.request("POST", "/graphql", {
      token: other.token,
      body: {
        query: `{ list(id: "${listId}") { ... on QueryListSuccess { data { assigneeCount assignees { id } } } } }`,
      },
    });
    expect(answer.body.data.list.data.assigneeCount).toBe(MEMBERS);
    expect(answer.body.data.list.data.assignees).toHaveLength(100);
  });
});

describe("230 follow requests to a locked account", () => {
  it("are paged 100 at a time by requester id, newest first, then 404 NOTHING_LEFT", async () => {
    const db = server.services.db;
    const locked = await account(server, "locked");
    await db.account.update({ where: { id: BigInt(locked.id) }, data: { locked: true } });
    await db.followRequest.createMany({
      data: members.map((requesterId) => ({ requesterId, targetId: BigInt(locked.id) })),
    });
    const seen = await everyPage(`/follow_requests`, locked);
    expect(seen).toEqual(members.map(String));
    expectError(
      await server.request("GET", "/follow_requests?before_id=x", { token: locked.token }),
      400,
      "INVALID_REQUEST",
    );
  });
});
