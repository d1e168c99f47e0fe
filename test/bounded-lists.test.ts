// Lists whose size others decide are bounded in every answer (docs/timelines.md#bounded-lists), and
// paged by `before_id` with timelines' rules (newest first, 404 NOTHING_LEFT past the end) where
// the whole is needed: a list shows at most 100 assignees with `assignee_count`, GET
// /lists/{id}/assignees pages them 100 a page; GET /follow_requests pages 100 requesters (it had
// cut at 1,000 with no way to the rest); GET /lists/accounts/{id} pages 20 lists (each carrying up
// to 100 assignees); GET /timeline/conversations pages 100 partners by `lastNoteId` (it had cut at
// 100); and GET /notifications takes `before_id` past its 50. GraphQL: the same as connections.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
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

interface Paged {
  /** The page's items, from its answer's body. */
  items?: (body: unknown) => Record<string, unknown>[];
  /** The member naming an item and taken by `before_id`. */
  cursor?: string;
  /** More query parameters. */
  query?: string;
}

/**
 * The cursors of every page of `path`, by before_id until 404 NOTHING_LEFT; each page's size is
 * checked to be `size`, the last one's at most that.
 */
async function everyPage(path: string, who: TestAccount, size: number, paged: Paged = {}): Promise<string[]> {
  const { items = (body) => body as Record<string, unknown>[], cursor = "id", query = "" } = paged;
  const seen: string[] = [];
  let before: string | undefined;
  for (;;) {
    const params = [query, before ? `before_id=${before}` : ""].filter(Boolean).join("&");
    const answer = await server.request("GET", `${path}${params ? `?${params}` : ""}`, { token: who.token });
    if (before && answer.status === 404) {
      expectError(answer, 404, "NOTHING_LEFT");
      return seen;
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = items(answer.body);
    expect(page.length).toBeLessThanOrEqual(size);
    // Only the last page is short: a short page before the end would be a page cut short.
    if (seen.length && page.length) expect(seen.length % size).toBe(0);
    const cursors = page.map((item) => String(item[cursor]));
    // Newest first across pages: a page that starts again from the top fails here, not forever.
    for (const [i, id] of cursors.entries())
      if (i || before) expect(BigInt(id)).toBeLessThan(BigInt(cursors[i - 1] ?? before));
    seen.push(...cursors);
    if (!page.length) return seen;
    before = seen.at(-1);
  }
}

/** A GraphQL query as `who`; its `data`. */
async function graphql(who: TestAccount, query: string, variables: Record<string, unknown> = {}) {
  const answer = await server.request("POST", "/graphql", { token: who.token, body: { query, variables } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
  return answer.body.data;
}

interface ConnectionPage {
  __typename: string;
  edges: { cursor: string; node: { id: string } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** Every node id of a connection, `first` at a time, to its end; the page past it is empty. */
async function everyEdge(first: number, load: (after: string | null) => Promise<ConnectionPage>): Promise<string[]> {
  const seen: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await load(after);
    expect(page.__typename, JSON.stringify(page)).not.toBe("DomainError");
    expect(page.edges.length).toBeLessThanOrEqual(first);
    seen.push(...page.edges.map((e) => e.node.id));
    if (!page.pageInfo.hasNextPage) {
      if (page.pageInfo.endCursor) {
        const past = await load(page.pageInfo.endCursor);
        expect(past).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
      }
      return seen;
    }
    expect(page.edges).toHaveLength(first);
    after = page.pageInfo.endCursor;
  }
}

const newestFirst = (a: bigint, b: bigint) => (a > b ? -1 : a < b ? 1 : 0);

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
  members = [...ids].sort(newestFirst);
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
    const seen = await everyPage(`/lists/${listId}/assignees`, other, 100);
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

  it("GraphQL: List.assignees is a connection whose first 100 come with the list, paged to the end", async () => {
    const query = `query ($id: ID!, $first: Int, $after: String) {
      list(id: $id) { ... on QueryListSuccess { data { assigneeCount assignees(first: $first, after: $after) {
        __typename ... on DomainError { code } ... on AccountConnection { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } } } } }`;
    const first = await graphql(other, query, { id: listId });
    expect(first.list.data.assigneeCount).toBe(MEMBERS);
    expect(first.list.data.assignees.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      members.slice(0, 100).map(String),
    );
    expect(first.list.data.assignees.pageInfo.hasNextPage).toBe(true);
    for (const size of [100, 37]) {
      const seen = await everyEdge(size, async (after) => {
        return (await graphql(other, query, { id: listId, first: size, after })).list.data.assignees;
      });
      expect(seen).toEqual(members.map(String));
    }
    const tooMany = await graphql(other, query, { id: listId, first: 101 });
    expect(tooMany.list.data.assignees).toMatchObject({ __typename: "DomainError", code: "INVALID_REQUEST" });
  });
});

describe("230 follow requests to a locked account", () => {
  let locked: TestAccount;
  beforeAll(async () => {
    const db = server.services.db;
    locked = await account(server, "locked");
    await db.account.update({ where: { id: BigInt(locked.id) }, data: { locked: true } });
    await db.followRequest.createMany({
      data: members.map((requesterId) => ({ requesterId, targetId: BigInt(locked.id) })),
    });
  });

  it("are paged 100 at a time by requester id, newest first, then 404 NOTHING_LEFT", async () => {
    const seen = await everyPage(`/follow_requests`, locked, 100);
    expect(seen).toEqual(members.map(String));
    expectError(
      await server.request("GET", "/follow_requests?before_id=x", { token: locked.token }),
      400,
      "INVALID_REQUEST",
    );
  });

  it("GraphQL: followRequests is a connection of 100 at most, paged to the end", async () => {
    const query = `query ($first: Int, $after: String) { followRequests(first: $first, after: $after) {
      __typename ... on DomainError { code } ... on AccountConnection { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } }`;
    const seen = await everyEdge(100, async (after) => (await graphql(locked, query, { after })).followRequests);
    expect(seen).toEqual(members.map(String));
  });
});

describe("an account with 45 lists", () => {
  const LISTS = 45;
  let lister: TestAccount;
  /** Its lists' ids, newest first; every third one private. */
  let all: string[];
  let open: string[];
  beforeAll(async () => {
    lister = await account(server, "lister");
    const ids = Array.from({ length: LISTS }, () => server.services.ids.next());
    await server.services.db.list.createMany({
      data: ids.map((id, i) => ({ id, ownerId: BigInt(lister.id), title: `list ${i}`, public: i % 3 !== 0 })),
    });
    // Each with a few of the members, to show the assignees ride along on every page.
    await server.services.db.listMember.createMany({
      data: ids.flatMap((listId) => members.slice(0, 3).map((accountId) => ({ listId, accountId }))),
    });
    const sorted = ids.map((id, i) => ({ id, open: i % 3 !== 0 })).sort((a, b) => newestFirst(a.id, b.id));
    all = sorted.map((l) => String(l.id));
    open = sorted.filter((l) => l.open).map((l) => String(l.id));
  });

  it("GET /lists/accounts/{id} answers 20 a page, newest first, then 404 NOTHING_LEFT", async () => {
    expect(await everyPage(`/lists/accounts/${lister.id}`, lister, 20)).toEqual(all);
    expect(await everyPage(`/lists/accounts/${lister.name}`, other, 20)).toEqual(open);
    const first = await server.request("GET", `/lists/accounts/${lister.id}`, { token: other.token });
    expect(first.body).toHaveLength(20);
    for (const list of first.body) expect(list.assignee_count).toBe(3);
  });

  it("an account with no lists answers [], and before_id must be a snowflake", async () => {
    expect((await server.request("GET", `/lists/accounts/${other.id}`, { token: other.token })).body).toEqual([]);
    expectError(
      await server.request("GET", `/lists/accounts/${lister.id}?before_id=abc`, { token: other.token }),
      400,
      "INVALID_REQUEST",
    );
  });

  it("GraphQL: listsOf is a connection of 20 at most, paged to the end", async () => {
    const query = `query ($name: String!, $first: Int, $after: String) {
      listsOf(name: $name, first: $first, after: $after) {
        __typename ... on DomainError { code } ... on ListConnection { edges { cursor node { id assignees(first: 2) { ... on AccountConnection { edges { node { id } } } } } }
          pageInfo { hasNextPage endCursor } } } }`;
    const seen = await everyEdge(
      20,
      async (after) => (await graphql(lister, query, { name: lister.name, after })).listsOf,
    );
    expect(seen).toEqual(all);
    const tooMany = await graphql(lister, query, { name: lister.name, first: 21 });
    expect(tooMany.listsOf).toMatchObject({ __typename: "DomainError", code: "INVALID_REQUEST" });
  });
});

describe("direct notes with 230 accounts", () => {
  /** The partners' ids, the one with the newest exchange first. */
  let partners: string[];
  let talker: TestAccount;
  beforeAll(async () => {
    talker = await account(server, "talker");
    const sent: { partner: string; note: bigint }[] = [];
    for (let i = 0; i < members.length; i += 10) {
      const batch = members.slice(i, i + 10);
      const notes = await Promise.all(
        batch.map((m) => act.post(server, talker, { content: `to ${m}`, visibility: "direct", send_to: String(m) })),
      );
      sent.push(...notes.map((n, j) => ({ partner: String(batch[j]), note: BigInt(n.id) })));
    }
    partners = sent.sort((a, b) => newestFirst(a.note, b.note)).map((s) => s.partner);
  });

  it("GET /timeline/conversations answers 100 partners a page, each with its lastNoteId for before_id, then 404 NOTHING_LEFT", async () => {
    const first = await server.request("GET", "/timeline/conversations", { token: talker.token });
    expect(first.body).toHaveLength(100);
    const seen = await everyPage("/timeline/conversations", talker, 100, { cursor: "lastNoteId" });
    expect(seen).toHaveLength(MEMBERS);
    const pages = [first.body];
    for (const before of [seen[99], seen[199]]) {
      pages.push(
        (await server.request("GET", `/timeline/conversations?before_id=${before}`, { token: talker.token })).body,
      );
    }
    expect(pages.flat().map((e: { account: { accountId: string } }) => e.account.accountId)).toEqual(partners);
    expect(pages.map((p) => p.length)).toEqual([100, 100, 30]);
    expectError(
      await server.request("GET", "/timeline/conversations?before_id=-1", { token: talker.token }),
      400,
      "INVALID_REQUEST",
    );
  });
});

describe("120 notifications", () => {
  const COUNT = 120;
  let notified: TestAccount;
  /** Their ids, newest first. */
  let ids: string[];
  beforeAll(async () => {
    notified = await account(server, "notified");
    const made = members.slice(0, COUNT).map((actorId) => ({
      id: server.services.ids.next(),
      recipientId: BigInt(notified.id),
      actorId,
      type: "followed" as const,
    }));
    await server.services.db.notification.createMany({ data: made });
    await server.services.db.announcement.create({
      data: { id: server.services.ids.next(), title: "hello", description: "all", type: "info" },
    });
    ids = made
      .map((n) => n.id)
      .sort(newestFirst)
      .map(String);
  });

  it("GET /notifications pages past its 50 with before_id (extension), announcements on the first page only", async () => {
    const query = "limit=50";
    const items = (body: unknown) => (body as { notifications: { id: string }[] }).notifications;
    expect(await everyPage("/notifications", notified, 50, { items, query })).toEqual(ids);
    const first = await server.request("GET", `/notifications?${query}`, { token: notified.token });
    expect(first.body.announcements).toHaveLength(1);
    const later = await server.request("GET", `/notifications?${query}&before_id=${ids[49]}`, {
      token: notified.token,
    });
    expect(later.body.announcements).toEqual([]);
    expect(later.body.notifications.map((n: { id: string }) => n.id)).toEqual(ids.slice(50, 100));
    // Before the oldest: REST's end of a paged list, found in the page's `notifications`.
    const past = await server.request("GET", `/notifications?${query}&before_id=${ids.at(-1)}`, {
      token: notified.token,
    });
    expectError(past, 404, "NOTHING_LEFT");
  });
});
