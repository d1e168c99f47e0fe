// Lists over REST (docs/timelines.md#lists): create, get, patch, get by
// account, assign and remove members, delete; private lists hidden from everyone but the owner;
// `listed` notifications for new members of public lists; the list's notes, filtered and paged.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, register, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { expectShape, FullNoteShape, ISO_MS, SNOWFLAKE } from "./support/shapes.ts";

const UNKNOWN_ID = "999999999999999999";

let server: TestServer;
// owen owns most lists; sue is a logged-in stranger; amy, ben and carl are accounts to assign;
// crowd holds 31 more registered accounts, for the 30-per-request limit.
let owen: TestAccount;
let sue: TestAccount;
let amy: TestAccount;
let ben: TestAccount;
let carl: TestAccount;
let crowd: string[];

beforeAll(async () => {
  server = await startTestServer();
  [owen, sue, amy, ben, carl] = await Promise.all([
    account(server, "owen"),
    account(server, "sue"),
    account(server, "amy"),
    account(server, "ben"),
    account(server, "carl"),
  ]);
  const registered = await Promise.all(Array.from({ length: 31 }, (_, i) => register(server, `crowd${i}`)));
  crowd = registered.map((a) => a.id);
});
afterAll(() => server.close());

type Who = Pick<TestAccount, "token"> | undefined;
interface ListBody {
  id: string;
  title: string;
  public: boolean;
}

const qualified = (name: string) => `@${name}@${HOST}`;
const sorted = (value: object) => Object.keys(value).sort();
const byId = (a: { id: string }, b: { id: string }) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);
const newestFirst = (ids: string[]) => [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? 1 : -1));
const assignee = (who: TestAccount) => ({ id: who.id, name: qualified(who.name) });

function createList(who: Who, body: unknown, path = "/lists"): Promise<Answer> {
  return server.request("POST", path, { body, token: who?.token });
}

function getList(id: string, who?: Who): Promise<Answer> {
  return server.request("GET", `/lists/${id}`, { token: who?.token });
}

function patchList(who: Who, id: string, body: unknown): Promise<Answer> {
  return server.request("PATCH", `/lists/${id}`, { body, token: who?.token });
}

function assign(who: Who, id: string, body: unknown): Promise<Answer> {
  return server.request("POST", `/lists/${id}`, { body, token: who?.token });
}

function remove(who: Who, id: string, body?: unknown): Promise<Answer> {
  return server.request("DELETE", `/lists/${id}`, { body, token: who?.token });
}

function listsOf(segment: string, who?: Who): Promise<Answer> {
  return server.request("GET", `/lists/accounts/${segment}`, { token: who?.token });
}

function listNotes(who: Who, id: string, query = ""): Promise<Answer> {
  return server.request("GET", `/lists/${id}/notes${query}`, { token: who?.token });
}

/** Creates a list that must succeed; its JSON. */
async function list(who: TestAccount, title: string, isPublic = false): Promise<ListBody> {
  const answer = await createList(who, { title, public: isPublic });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

/** Assigns accounts, which must succeed. */
async function members(who: TestAccount, id: string, accounts: TestAccount[]): Promise<void> {
  const answer = await assign(who, id, { account_id: accounts.map((a) => a.id) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** The assignees the owner sees in GET /lists/{id}, ordered by id. */
async function assigneesOf(id: string, owner = owen): Promise<{ id: string; name: string }[]> {
  const answer = await getList(id, owner);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return [...answer.body.assignees].sort(byId);
}

const note = async (who: TestAccount, body: Record<string, unknown>) => (await act.post(server, who, body)).id;
const follow = (follower: TestAccount, name: string) => act.follow(server, follower, name);

// biome-ignore lint/suspicious/noExplicitAny: notifications are read field by field
async function listedOf(who: TestAccount): Promise<any[]> {
  const answer = await server.request("GET", "/notifications?limit=50", { token: who.token });
  expect(answer.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: as above
  return answer.body.notifications.filter((n: any) => n.type === "listed");
}

function expectEmpty(answer: Answer, status = 204) {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: "" });
}

describe("POST /lists", () => {
  it("answers 200 with exactly {id, title, public}; public defaults to false", async () => {
    const answer = await createList(owen, { title: "friends" });
    expect(answer.status).toBe(200);
    expect(sorted(answer.body)).toEqual(["id", "public", "title"]);
    expect(answer.body).toEqual({ id: expect.stringMatching(SNOWFLAKE), title: "friends", public: false });
  });

  it("keeps public: true and public: false", async () => {
    const open = await createList(owen, { title: "open", public: true });
    expect(open.status).toBe(200);
    expect(open.body).toEqual({ id: expect.stringMatching(SNOWFLAKE), title: "open", public: true });
    const closed = await createList(owen, { title: "closed", public: false });
    expect(closed.status).toBe(200);
    expect(closed.body).toEqual({ id: expect.stringMatching(SNOWFLAKE), title: "closed", public: false });
    expect(BigInt(closed.body.id)).toBeGreaterThan(BigInt(open.body.id));
  });

  it("counts the title in code points: 100 emoji pass, 101 characters give 400 TITLE_TOO_LONG", async () => {
    const emoji = "😀".repeat(100);
    const ok = await createList(owen, { title: emoji });
    expect(ok.status).toBe(200);
    expect(ok.body.title).toBe(emoji);
    expect((await getList(ok.body.id, owen)).body.title).toBe(emoji);
    expect((await createList(owen, { title: "a".repeat(100) })).status).toBe(200);
    expectError(await createList(owen, { title: "😀".repeat(101) }), 400, "TITLE_TOO_LONG");
    expectError(await createList(owen, { title: "a".repeat(101) }), 400, "TITLE_TOO_LONG");
  });

  it.each([
    ["an empty title", { title: "" }],
    ["no title", {}],
    ["only public", { public: true }],
    ["a numeric title", { title: 5 }],
    ["a null title", { title: null }],
    ["public as a string", { title: "x", public: "true" }],
    ["public as a number", { title: "x", public: 1 }],
    ["an array body", ["x"]],
  ])("rejects %s: 400 INVALID_REQUEST", async (_, body) => {
    expectError(await createList(owen, body), 400, "INVALID_REQUEST");
  });

  it("rejects malformed JSON: 400 INVALID_REQUEST", async () => {
    const answer = await server.request("POST", "/lists", {
      payload: '{"title": ',
      token: owen.token,
      headers: { "content-type": "application/json" },
    });
    expectError(answer, 400, "INVALID_REQUEST");
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    expectUnauthorized(await createList(undefined, { title: "anonymous" }), "UNAUTHORIZED");
  });

  it("is served at /lists/, /v0/lists and /v0/lists/ too", async () => {
    for (const path of ["/lists/", "/v0/lists", "/v0/lists/"]) {
      const answer = await createList(owen, { title: `at ${path}` }, path);
      expect(answer.status, path).toBe(200);
      expect(answer.body).toEqual({ id: expect.stringMatching(SNOWFLAKE), title: `at ${path}`, public: false });
      expect((await getList(answer.body.id, owen)).body.title).toBe(`at ${path}`);
    }
  });
});

describe("GET /lists/{id}", () => {
  it("shows the owner a private list: exactly {id, title, public, assignees}, names qualified", async () => {
    const created = await list(owen, "private one");
    const empty = await getList(created.id, owen);
    expect(empty.status).toBe(200);
    expect(sorted(empty.body)).toEqual(["assignee_count", "assignees", "id", "public", "title"]);
    expect(empty.body).toEqual({
      id: created.id,
      title: "private one",
      public: false,
      assignees: [],
      assignee_count: 0,
    });

    await members(owen, created.id, [amy, ben]);
    const full = await getList(created.id, owen);
    expect(full.status).toBe(200);
    expect({ ...full.body, assignees: [...full.body.assignees].sort(byId) }).toEqual({
      id: created.id,
      title: "private one",
      public: false,
      assignees: [assignee(amy), assignee(ben)].sort(byId),
      assignee_count: 2,
    });
    for (const entry of full.body.assignees) expect(sorted(entry)).toEqual(["id", "name"]);
  });

  it("shows a public list to its owner, to other accounts and without credentials", async () => {
    const created = await list(owen, "public one", true);
    await members(owen, created.id, [carl]);
    const expected = {
      id: created.id,
      title: "public one",
      public: true,
      assignees: [assignee(carl)],
      assignee_count: 1,
    };
    for (const who of [owen, sue, amy, undefined]) {
      const answer = await getList(created.id, who);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(expected);
    }
    const versioned = await server.request("GET", `/v0/lists/${created.id}/`);
    expect(versioned.status).toBe(200);
    expect(versioned.body).toEqual(expected);
  });

  it("hides a private list from other accounts, its members and anonymous callers: 404 LIST_NOTFOUND", async () => {
    const created = await list(owen, "secret");
    await members(owen, created.id, [amy]);
    for (const who of [sue, amy, undefined]) expectError(await getList(created.id, who), 404, "LIST_NOTFOUND");
  });

  it("answers 404 LIST_NOTFOUND for an unknown id and for ids that are no snowflakes", async () => {
    for (const id of [UNKNOWN_ID, "abc", "-1", "1.5", "99999999999999999999999"]) {
      expectError(await getList(id, owen), 404, "LIST_NOTFOUND");
      expectError(await getList(id), 404, "LIST_NOTFOUND");
    }
  });
});

describe("PATCH /lists/{id}", () => {
  it("renames a list and answers 200 with the list and its assignees", async () => {
    const created = await list(owen, "before");
    await members(owen, created.id, [amy]);
    const answer = await patchList(owen, created.id, { title: "after" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: created.id,
      title: "after",
      public: false,
      assignees: [assignee(amy)],
      assignee_count: 1,
    });
    expect((await getList(created.id, owen)).body).toEqual(answer.body);
  });

  it("makes a list public, and both members together", async () => {
    const created = await list(owen, "soon public");
    const opened = await patchList(owen, created.id, { public: true });
    expect(opened.status).toBe(200);
    expect(opened.body).toEqual({
      id: created.id,
      title: "soon public",
      public: true,
      assignees: [],
      assignee_count: 0,
    });
    expect((await getList(created.id, sue)).status).toBe(200);

    const both = await patchList(owen, created.id, { title: "renamed", public: false });
    expect(both.status).toBe(200);
    expect(both.body).toEqual({ id: created.id, title: "renamed", public: false, assignees: [], assignee_count: 0 });
  });

  it("making a list private hides it from others (get, get-by-account, notes)", async () => {
    const created = await list(owen, "going private", true);
    await members(owen, created.id, [amy]);
    expect((await getList(created.id, sue)).status).toBe(200);
    expect((await listsOf(owen.id, sue)).body.map((l: ListBody) => l.id)).toContain(created.id);

    const closed = await patchList(owen, created.id, { public: false });
    expect(closed.status).toBe(200);
    expect(closed.body.public).toBe(false);
    expectError(await getList(created.id, sue), 404, "LIST_NOTFOUND");
    expectError(await getList(created.id), 404, "LIST_NOTFOUND");
    expectError(await listNotes(sue, created.id), 404, "LIST_NOTFOUND");
    expect((await listsOf(owen.id, sue)).body.map((l: ListBody) => l.id)).not.toContain(created.id);
    expect((await getList(created.id, owen)).status).toBe(200);
  });

  it("takes a title of 100 emoji and rejects 101: 400 TITLE_TOO_LONG, leaving the list as it was", async () => {
    const created = await list(owen, "long titles");
    const ok = await patchList(owen, created.id, { title: "🎉".repeat(100) });
    expect(ok.status).toBe(200);
    expect(ok.body.title).toBe("🎉".repeat(100));
    expectError(await patchList(owen, created.id, { title: "🎉".repeat(101) }), 400, "TITLE_TOO_LONG");
    expectError(await patchList(owen, created.id, { title: "b".repeat(101), public: true }), 400, "TITLE_TOO_LONG");
    expect((await getList(created.id, owen)).body).toMatchObject({ title: "🎉".repeat(100), public: false });
  });

  it.each([
    ["an empty object", {}],
    ["an empty title", { title: "" }],
    ["a numeric title", { title: 5 }],
    ["public as a string", { public: "true" }],
    ["an array body", [{ title: "x" }]],
  ])("rejects %s: 400 INVALID_REQUEST", async (_, body) => {
    const created = await list(owen, "unchanged");
    expectError(await patchList(owen, created.id, body), 400, "INVALID_REQUEST");
    expect((await getList(created.id, owen)).body).toMatchObject({ title: "unchanged", public: false });
  });

  it("refuses another account's list, even a public one: 404 LIST_NOTFOUND, nothing changed", async () => {
    const open = await list(owen, "owen's public", true);
    const closed = await list(owen, "owen's private");
    for (const created of [open, closed]) {
      expectError(await patchList(sue, created.id, { title: "taken over" }), 404, "LIST_NOTFOUND");
      expectError(await patchList(sue, created.id, { public: !created.public }), 404, "LIST_NOTFOUND");
      expect((await getList(created.id, owen)).body).toMatchObject({ title: created.title, public: created.public });
    }
  });

  it("answers 404 LIST_NOTFOUND for an unknown list and 401 UNAUTHORIZED without credentials", async () => {
    expectError(await patchList(owen, UNKNOWN_ID, { title: "x" }), 404, "LIST_NOTFOUND");
    expectError(await patchList(owen, "abc", { title: "x" }), 404, "LIST_NOTFOUND");
    const created = await list(owen, "mine", true);
    expectUnauthorized(await patchList(undefined, created.id, { title: "x" }), "UNAUTHORIZED");
    expect((await getList(created.id)).body.title).toBe("mine");
  });
});

describe("GET /lists/accounts/{account_id}", () => {
  let lou: TestAccount;
  let open: ListBody;
  let closed: ListBody;
  let second: ListBody;
  beforeAll(async () => {
    lou = await account(server, "lou");
    open = await list(lou, "lou public", true);
    closed = await list(lou, "lou private");
    second = await list(lou, "lou public too", true);
    await members(lou, open.id, [amy, ben]);
    await members(lou, closed.id, [carl]);
  });

  const view = (l: ListBody, assignees: TestAccount[]) => ({
    id: l.id,
    title: l.title,
    public: l.public,
    assignees: assignees.map(assignee).sort(byId),
    assignee_count: assignees.length,
  });
  // biome-ignore lint/suspicious/noExplicitAny: list views are read field by field
  const normalized = (body: any[]) => body.map((l) => ({ ...l, assignees: [...l.assignees].sort(byId) })).sort(byId);

  it("gives the owner all its lists, private ones included, each with assignees", async () => {
    const answer = await listsOf(lou.id, lou);
    expect(answer.status).toBe(200);
    for (const l of answer.body) expect(sorted(l)).toEqual(["assignee_count", "assignees", "id", "public", "title"]);
    expect(normalized(answer.body)).toEqual([view(open, [amy, ben]), view(closed, [carl]), view(second, [])]);
  });

  it("gives other accounts the public lists only", async () => {
    const expected = [view(open, [amy, ben]), view(second, [])];
    for (const who of [sue, amy, carl]) {
      const answer = await listsOf(lou.id, who);
      expect(answer.status).toBe(200);
      expect(normalized(answer.body)).toEqual(expected);
    }
  });

  it("answers 401 UNAUTHORIZED without credentials (not a public operation: docs/http.md#public-operations)", async () => {
    expectError(await listsOf(lou.id), 401, "UNAUTHORIZED");
  });

  it("takes the account's name, plain or qualified, as well as its id", async () => {
    for (const segment of ["lou", qualified("lou")]) {
      const mine = await listsOf(encodeURIComponent(segment), lou);
      expect(mine.status).toBe(200);
      expect(normalized(mine.body)).toEqual([view(open, [amy, ben]), view(closed, [carl]), view(second, [])]);
      const theirs = await listsOf(encodeURIComponent(segment), sue);
      expect(theirs.status).toBe(200);
      expect(normalized(theirs.body)).toEqual([view(open, [amy, ben]), view(second, [])]);
    }
  });

  it("answers 200 [] for an account without lists", async () => {
    const answer = await listsOf(ben.id, sue);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: [] });
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account id or name", async () => {
    expectError(await listsOf(UNKNOWN_ID, owen), 404, "ACCOUNT_NOT_FOUND");
    expectError(await listsOf("nobody-here", owen), 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("POST /lists/{id} (assign)", () => {
  it("answers 200 with exactly {account_id}, and the assignees show in GET", async () => {
    const created = await list(owen, "assign");
    const answer = await assign(owen, created.id, { account_id: [amy.id, ben.id] });
    expect(answer.status).toBe(200);
    expect(sorted(answer.body)).toEqual(["account_id"]);
    expect([...answer.body.account_id].sort()).toEqual([amy.id, ben.id].sort());
    expect(await assigneesOf(created.id)).toEqual([assignee(amy), assignee(ben)].sort(byId));

    const more = await assign(owen, created.id, { account_id: [carl.id] });
    expect(more.status).toBe(200);
    expect(more.body).toEqual({ account_id: [carl.id] });
    expect(await assigneesOf(created.id)).toEqual([assignee(amy), assignee(ben), assignee(carl)].sort(byId));
  });

  it("takes 30 accounts and rejects 31: 400 TOO_MANY_TARGETS, assigning none", async () => {
    const created = await list(owen, "crowded");
    expectError(await assign(owen, created.id, { account_id: crowd }), 400, "TOO_MANY_TARGETS");
    expect(await assigneesOf(created.id)).toEqual([]);

    const thirty = await assign(owen, created.id, { account_id: crowd.slice(0, 30) });
    expect(thirty.status).toBe(200);
    expect([...thirty.body.account_id].sort()).toEqual(crowd.slice(0, 30).sort());
    expect((await assigneesOf(created.id)).map((a) => a.id).sort()).toEqual(crowd.slice(0, 30).sort());
  });

  it("is all-or-nothing: one unknown id among valid ones gives 404 ACCOUNT_NOT_FOUND and assigns none", async () => {
    const created = await list(owen, "all or nothing");
    expectError(await assign(owen, created.id, { account_id: [amy.id, UNKNOWN_ID, ben.id] }), 404, "ACCOUNT_NOT_FOUND");
    expectError(await assign(owen, created.id, { account_id: [amy.id, "not-an-id"] }), 404, "ACCOUNT_NOT_FOUND");
    expect(await assigneesOf(created.id)).toEqual([]);
  });

  it("assigns an existing member again harmlessly: listed once", async () => {
    const created = await list(owen, "twice");
    await members(owen, created.id, [amy]);
    const again = await assign(owen, created.id, { account_id: [amy.id, ben.id] });
    expect(again.status).toBe(200);
    const repeated = await assign(owen, created.id, { account_id: [amy.id, amy.id] });
    expect(repeated.status).toBe(200);
    expect(await assigneesOf(created.id)).toEqual([assignee(amy), assignee(ben)].sort(byId));
  });

  it("refuses another account's list, public or private: 404 LIST_NOTFOUND, assigning none", async () => {
    const open = await list(owen, "not sue's", true);
    const closed = await list(owen, "not sue's either");
    for (const created of [open, closed]) {
      expectError(await assign(sue, created.id, { account_id: [sue.id] }), 404, "LIST_NOTFOUND");
      expect(await assigneesOf(created.id)).toEqual([]);
    }
    expectError(await assign(owen, UNKNOWN_ID, { account_id: [amy.id] }), 404, "LIST_NOTFOUND");
  });

  it.each([
    ["an empty object", {}],
    ["account_id a string", { account_id: "1" }],
    ["account_id null", { account_id: null }],
    ["account_id of numbers", { account_id: [1] }],
    ["an array body", ["1"]],
  ])("rejects %s: 400 INVALID_REQUEST", async (_, body) => {
    const created = await list(owen, "bad body");
    expectError(await assign(owen, created.id, body), 400, "INVALID_REQUEST");
    expect(await assigneesOf(created.id)).toEqual([]);
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    const created = await list(owen, "no anonymous", true);
    expectUnauthorized(await assign(undefined, created.id, { account_id: [amy.id] }), "UNAUTHORIZED");
    expect(await assigneesOf(created.id)).toEqual([]);
  });
});

describe("listed notifications", () => {
  let nia: TestAccount;
  let noa: TestAccount;
  let zed: TestAccount;
  beforeAll(async () => {
    [nia, noa, zed] = await Promise.all([account(server, "nia"), account(server, "noa"), account(server, "zed")]);
  });

  it("notify each new member of a public list: type listed, actor the owner, listId", async () => {
    const created = await list(owen, "notifying", true);
    await members(owen, created.id, [nia, noa]);
    const profile = (await server.request("GET", "/accounts/owen")).body;
    for (const who of [nia, noa]) {
      const listed = await listedOf(who);
      expect(listed).toHaveLength(1);
      expect(sorted(listed[0])).toEqual(["actor", "createdAt", "id", "listId", "type"]);
      expect(listed[0]).toEqual({
        id: expect.stringMatching(SNOWFLAKE),
        type: "listed",
        actor: {
          type: "account",
          account: { id: owen.id, name: qualified("owen"), nickname: profile.nickname, avatar: profile.avatar },
        },
        listId: created.id,
        createdAt: expect.stringMatching(ISO_MS),
      });
    }
  });

  it("do not notify a member assigned again; a newcomer in the same request is notified", async () => {
    const created = await list(owen, "again", true);
    await members(owen, created.id, [zed]);
    const first = (await listedOf(zed)).filter((n) => n.listId === created.id);
    expect(first).toHaveLength(1);

    await members(owen, created.id, [zed, nia]);
    await members(owen, created.id, [zed]);
    expect((await listedOf(zed)).filter((n) => n.listId === created.id)).toEqual(first);
    expect((await listedOf(nia)).filter((n) => n.listId === created.id)).toHaveLength(1);
  });

  it("notify a member once when the same assignment arrives many times at once", async () => {
    const created = await list(owen, "concurrent", true);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => assign(owen, created.id, { account_id: [noa.id] })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(await assigneesOf(created.id)).toEqual([assignee(noa)]);
    expect((await listedOf(noa)).filter((n) => n.listId === created.id)).toHaveLength(1);
  });

  it("are not sent for a private list", async () => {
    const before = (await listedOf(noa)).length;
    const created = await list(owen, "quiet");
    await members(owen, created.id, [noa]);
    const listed = await listedOf(noa);
    expect(listed).toHaveLength(before);
    expect(listed.filter((n) => n.listId === created.id)).toEqual([]);
  });

  it("are not sent to the owner assigning itself", async () => {
    const created = await list(zed, "zed's own", true);
    await members(zed, created.id, [zed]);
    expect(await assigneesOf(created.id, zed)).toEqual([assignee(zed)]);
    expect((await listedOf(zed)).filter((n) => n.listId === created.id)).toEqual([]);
  });
});

describe("DELETE /lists/{id}", () => {
  it("with {account_id} removes those members only: 204 empty", async () => {
    const created = await list(owen, "shrinking", true);
    await members(owen, created.id, [amy, ben, carl]);
    expectEmpty(await remove(owen, created.id, { account_id: [amy.id, carl.id] }));
    expect(await assigneesOf(created.id)).toEqual([assignee(ben)]);
    expect((await getList(created.id, owen)).body).toMatchObject({ title: "shrinking", public: true });
  });

  it("rejects 31 ids: 400 TOO_MANY_TARGETS, removing none; 30 are removed", async () => {
    const created = await list(owen, "crowd removal");
    expect((await assign(owen, created.id, { account_id: crowd.slice(0, 30) })).status).toBe(200);
    await members(owen, created.id, [amy]);
    const all = [...crowd.slice(0, 30), amy.id].sort();
    expectError(
      await remove(owen, created.id, { account_id: [...crowd.slice(0, 30), amy.id] }),
      400,
      "TOO_MANY_TARGETS",
    );
    expect((await assigneesOf(created.id)).map((a) => a.id).sort()).toEqual(all);

    expectEmpty(await remove(owen, created.id, { account_id: crowd.slice(0, 30) }));
    expect(await assigneesOf(created.id)).toEqual([assignee(amy)]);
  });

  it("rejects an unknown id: 404 ACCOUNT_NOT_FOUND, removing none", async () => {
    const created = await list(owen, "keep them");
    await members(owen, created.id, [amy, ben]);
    expectError(await remove(owen, created.id, { account_id: [amy.id, UNKNOWN_ID] }), 404, "ACCOUNT_NOT_FOUND");
    expect(await assigneesOf(created.id)).toEqual([assignee(amy), assignee(ben)].sort(byId));
  });

  it("without a body deletes the list: 204, then 404 LIST_NOTFOUND", async () => {
    const created = await list(owen, "doomed", true);
    await members(owen, created.id, [amy]);
    expectEmpty(await remove(owen, created.id));
    expectError(await getList(created.id, owen), 404, "LIST_NOTFOUND");
    expectError(await getList(created.id), 404, "LIST_NOTFOUND");
    expectError(await listNotes(owen, created.id), 404, "LIST_NOTFOUND");
    expect((await listsOf(owen.id, owen)).body.map((l: ListBody) => l.id)).not.toContain(created.id);
    expectError(await remove(owen, created.id), 404, "LIST_NOTFOUND");
  });

  it("with {} deletes the list: 204, then 404 LIST_NOTFOUND", async () => {
    const created = await list(owen, "doomed too");
    await members(owen, created.id, [amy]);
    expectEmpty(await remove(owen, created.id, {}));
    expectError(await getList(created.id, owen), 404, "LIST_NOTFOUND");
    expectError(await remove(owen, created.id, {}), 404, "LIST_NOTFOUND");
  });

  it("refuses another account's list: 404 LIST_NOTFOUND and nothing changes", async () => {
    for (const isPublic of [true, false]) {
      const created = await list(owen, "owen keeps it", isPublic);
      await members(owen, created.id, [amy, ben]);
      expectError(await remove(sue, created.id), 404, "LIST_NOTFOUND");
      expectError(await remove(sue, created.id, {}), 404, "LIST_NOTFOUND");
      expectError(await remove(sue, created.id, { account_id: [amy.id] }), 404, "LIST_NOTFOUND");
      expect(await getList(created.id, owen)).toMatchObject({
        status: 200,
        body: { id: created.id, title: "owen keeps it", public: isPublic },
      });
      expect(await assigneesOf(created.id)).toEqual([assignee(amy), assignee(ben)].sort(byId));
    }
  });

  it("answers 404 LIST_NOTFOUND for an unknown list and 401 UNAUTHORIZED without credentials", async () => {
    expectError(await remove(owen, UNKNOWN_ID), 404, "LIST_NOTFOUND");
    expectError(await remove(owen, UNKNOWN_ID, { account_id: [amy.id] }), 404, "LIST_NOTFOUND");
    const created = await list(owen, "survives", true);
    expectUnauthorized(await remove(undefined, created.id), "UNAUTHORIZED");
    expect((await getList(created.id)).status).toBe(200);
  });
});

describe("GET /lists/{id}/notes", () => {
  // wren and wes are members; owen follows wren only; nat is no member.
  let wren: TestAccount;
  let wes: TestAccount;
  let nat: TestAccount;
  let feed: ListBody;
  let publicFeed: ListBody;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    [wren, wes, nat] = await Promise.all([account(server, "wren"), account(server, "wes"), account(server, "nat")]);
    await follow(owen, "wren");
    feed = await list(owen, "feed");
    publicFeed = await list(owen, "public feed", true);
    await members(owen, feed.id, [wren, wes]);
    await members(owen, publicFeed.id, [wren, wes]);
    ids.wrenPublic = await note(wren, { content: "wren public" });
    ids.wrenHome = await note(wren, { content: "wren home", visibility: "home" });
    ids.wrenFollowers = await note(wren, { content: "wren followers", visibility: "followers" });
    ids.wrenDirectToOwen = await note(wren, { content: "wren to owen", visibility: "direct", send_to: owen.id });
    ids.wrenDirectToSue = await note(wren, { content: "wren to sue", visibility: "direct", send_to: sue.id });
    ids.wesFollowers = await note(wes, { content: "wes followers", visibility: "followers" });
    ids.wesPublic = await note(wes, { content: "wes public" });
    ids.natPublic = await note(nat, { content: "nat public" });
    ids.owenPublic = await note(owen, { content: "owen public" });
  });

  it("gives the members' notes the caller may see, newest first, in the full Note shape", async () => {
    const answer = await listNotes(owen, feed.id);
    expect(answer.status).toBe(200);
    expect(answer.body.map((n: { id: string }) => n.id)).toEqual(
      newestFirst([ids.wrenPublic, ids.wrenHome, ids.wrenFollowers, ids.wesPublic]),
    );
    for (const item of answer.body) {
      expectShape(FullNoteShape, item);
    }
    const wrenPublic = answer.body.find((n: { id: string }) => n.id === ids.wrenPublic);
    expect(wrenPublic).toMatchObject({
      content: "wren public",
      cw_comment: "",
      visibility: "public",
      created_at: expect.stringMatching(ISO_MS),
      attachment_files: [],
      reactions: [],
      author: { id: wren.id, name: qualified("wren") },
    });
  });

  it("never gives direct notes, not even to their addressee, nor notes of non-members or the owner", async () => {
    const seen = (await listNotes(owen, feed.id)).body.map((n: { id: string }) => n.id);
    for (const id of [ids.wrenDirectToOwen, ids.wrenDirectToSue, ids.natPublic, ids.owenPublic]) {
      expect(seen).not.toContain(id);
    }
    const bySue = (await listNotes(sue, publicFeed.id)).body.map((n: { id: string }) => n.id);
    expect(bySue).not.toContain(ids.wrenDirectToSue);
  });

  it("gives a member's followers-only notes only to a caller that follows that member", async () => {
    const byOwen = await listNotes(owen, publicFeed.id);
    expect(byOwen.status).toBe(200);
    const owenSees = byOwen.body.map((n: { id: string }) => n.id);
    expect(owenSees).toContain(ids.wrenFollowers);
    expect(owenSees).not.toContain(ids.wesFollowers);

    const bySue = await listNotes(sue, publicFeed.id);
    expect(bySue.status).toBe(200);
    expect(bySue.body.map((n: { id: string }) => n.id)).toEqual(
      newestFirst([ids.wrenPublic, ids.wrenHome, ids.wesPublic]),
    );
  });

  it("answers 404 LIST_NOTFOUND for another account's private list or an unknown one", async () => {
    expectError(await listNotes(sue, feed.id), 404, "LIST_NOTFOUND");
    expectError(await listNotes(wren, feed.id), 404, "LIST_NOTFOUND");
    expectError(await listNotes(owen, UNKNOWN_ID), 404, "LIST_NOTFOUND");
    expectError(await listNotes(owen, "abc"), 404, "LIST_NOTFOUND");
  });

  it("answers 200 [] for a list without members", async () => {
    const empty = await list(owen, "nobody");
    const answer = await listNotes(owen, empty.id);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: [] });
  });

  it("requires credentials: 401 UNAUTHORIZED, even for a public list", async () => {
    expectUnauthorized(await listNotes(undefined, publicFeed.id), "UNAUTHORIZED");
    expectUnauthorized(await listNotes(undefined, feed.id), "UNAUTHORIZED");
  });

  it.each([
    ["?before_id=abc"],
    ["?before_id=-5"],
    ["?before_id=1.5"],
    ["?before_id="],
    ["?has_attachment=yes"],
    ["?no_nsfw=1"],
  ])("rejects %s: 400 INVALID_REQUEST", async (query) => {
    expectError(await listNotes(owen, feed.id, query), 400, "INVALID_REQUEST");
  });

  describe("paging", () => {
    let pat: TestAccount;
    let paged: ListBody;
    const written: string[] = [];
    beforeAll(async () => {
      pat = await account(server, "pat");
      paged = await list(owen, "paged");
      await members(owen, paged.id, [pat]);
      for (let i = 0; i < 25; i++) written.push(await note(pat, { content: `page note ${i}` }));
    });

    it("gives at most 20 notes, then the rest with before_id, then 404 NOTHING_LEFT", async () => {
      const all = newestFirst(written);
      const first = await listNotes(owen, paged.id);
      expect(first.status).toBe(200);
      expect(first.body.map((n: { id: string }) => n.id)).toEqual(all.slice(0, 20));

      const second = await listNotes(owen, paged.id, `?before_id=${all[19]}`);
      expect(second.status).toBe(200);
      expect(second.body.map((n: { id: string }) => n.id)).toEqual(all.slice(20));

      expectError(await listNotes(owen, paged.id, `?before_id=${all[24]}`), 404, "NOTHING_LEFT");
    });

    it("excludes the before_id note itself and starts right below it", async () => {
      const all = newestFirst(written);
      const answer = await listNotes(owen, paged.id, `?before_id=${all[3]}`);
      expect(answer.status).toBe(200);
      expect(answer.body.map((n: { id: string }) => n.id)).toEqual(all.slice(4, 24));
    });

    it("answers 404 NOTHING_LEFT for a list without members asked with before_id", async () => {
      const empty = await list(owen, "empty paged");
      expectError(await listNotes(owen, empty.id, `?before_id=${UNKNOWN_ID}`), 404, "NOTHING_LEFT");
    });
  });

  describe("filters", () => {
    let fay: TestAccount;
    let filtered: ListBody;
    const fid: Record<string, string> = {};
    beforeAll(async () => {
      fay = await account(server, "fay");
      filtered = await list(owen, "filtered");
      await members(owen, filtered.id, [fay]);
      const bytes = await image("png", 16, 16);
      const safe = await uploadFile(server, fay, bytes, "safe.png");
      const risky = await uploadFile(server, fay, bytes, "risky.png", { nsfw: "true" });
      fid.plain = await note(fay, { content: "plain" });
      fid.safe = await note(fay, { content: "safe", attachment_file_ids: [safe.id] });
      fid.nsfw = await note(fay, { content: "nsfw", attachment_file_ids: [risky.id] });
      fid.mixed = await note(fay, { content: "mixed", attachment_file_ids: [safe.id, risky.id] });
    });

    it.each([
      ["", ["plain", "safe", "nsfw", "mixed"]],
      ["?has_attachment=false&no_nsfw=false", ["plain", "safe", "nsfw", "mixed"]],
      ["?has_attachment=true", ["safe", "nsfw", "mixed"]],
      ["?no_nsfw=true", ["plain", "safe"]],
      ["?has_attachment=true&no_nsfw=true", ["safe"]],
    ])("%s gives exactly the matching notes, newest first", async (query, names) => {
      const answer = await listNotes(owen, filtered.id, query);
      expect(answer.status).toBe(200);
      expect(answer.body.map((n: { id: string }) => n.id)).toEqual(newestFirst(names.map((name) => fid[name])));
    });

    it("applies the filters to later pages too", async () => {
      const answer = await listNotes(owen, filtered.id, `?has_attachment=true&before_id=${fid.mixed}`);
      expect(answer.status).toBe(200);
      expect(answer.body.map((n: { id: string }) => n.id)).toEqual(newestFirst([fid.safe, fid.nsfw]));
      expectError(
        await listNotes(owen, filtered.id, `?has_attachment=true&before_id=${fid.safe}`),
        404,
        "NOTHING_LEFT",
      );
    });
  });
});
