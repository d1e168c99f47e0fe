// Timelines over REST (docs/timelines.md): home, global, an account's
// timeline and direct conversations. Newest first by id, 20 a page, before_id paging with
// NOTHING_LEFT while new notes arrive, the has_attachment and no_nsfw filters, every code, blocks,
// frozen authors, and the one visibility rule on every timeline.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { expectShape, FullNoteShape, ISO_MS, SNOWFLAKE } from "./support/shapes.ts";

const UNKNOWN_ID = "999999999999999999";
/** Not snowflakes: before_id like these is 400 INVALID_REQUEST. */
const BAD_BEFORE_IDS = ["abc", "-1", "", "1.5", "1e5", "18446744073709551616"];
/** Not `true`/`false`: has_attachment or no_nsfw like these is 400 INVALID_REQUEST. */
const BAD_FLAGS = ["1", "yes", "0", "TRUE", ""];

let server: TestServer;
let mod: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  mod = await account(server, "mod", "moderator");
});
afterAll(() => server.close());

type Who = Pick<TestAccount, "token"> | undefined;
// biome-ignore lint/suspicious/noExplicitAny: timeline items are read field by field
type Item = any;

const qualified = (name: string) => `@${name}@${HOST}`;
const sorted = (value: object) => Object.keys(value).sort();
const idsOf = (answer: Answer): string[] => (answer.body as Item[]).map((n) => n.id);
const newestFirst = (...notes: { id: string }[]) => notes.map((n) => n.id).reverse();

function get(url: string, who?: Who): Promise<Answer> {
  return server.request("GET", url, { token: who?.token });
}

/** A timeline answer that must be 200 with an array; the ids, in order. */
async function timelineIds(url: string, who?: Who): Promise<string[]> {
  const answer = await get(url, who);
  expect(answer.status, `${url}: ${JSON.stringify(answer.body)}`).toBe(200);
  expect(Array.isArray(answer.body)).toBe(true);
  return idsOf(answer);
}

/** Creates a note that must succeed; its JSON. */
const note = (who: TestAccount, body: Record<string, unknown>) => act.post(server, who, body);

/** One note of each visibility by `who`, oldest first; the direct one goes to `to`. */
async function oneOfEach(who: TestAccount, to: TestAccount, tag: string) {
  const pub = await note(who, { content: `${tag} public`, visibility: "public" });
  const home = await note(who, { content: `${tag} home`, visibility: "home" });
  const followers = await note(who, { content: `${tag} followers`, visibility: "followers" });
  const direct = await note(who, { content: `${tag} direct`, visibility: "direct", send_to: to.id });
  return { pub, home, followers, direct };
}

const follow = (follower: TestAccount, name: string) => act.follow(server, follower, name);

async function expectNoContent(answer: Promise<Answer>) {
  const done = await answer;
  expect({ status: done.status, body: done.body }).toEqual({ status: 204, body: "" });
}

const moderate = (name: string, action: act.ModerationAction) => act.moderate(server, mod, name, action);

/** Every item has the full Note shape: reactions and exactly the author summary. */
function expectFullNotes(items: Item[]) {
  for (const item of items) {
    FullNoteShape.parse(item);
    expect(item.id).toMatch(SNOWFLAKE);
    expect(item.created_at).toMatch(ISO_MS);
    expect(Array.isArray(item.reactions)).toBe(true);
    expect(Array.isArray(item.attachment_files)).toBe(true);
  }
}

/** Ids strictly decreasing: newest first, no repeats. */
function expectNewestFirst(ids: string[]) {
  for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]) < BigInt(ids[i - 1])).toBe(true);
}

describe("GET /timeline/home", () => {
  let hana: TestAccount;
  let hugo: TestAccount;
  let hank: TestAccount;
  let own: Awaited<ReturnType<typeof oneOfEach>>;
  let followed: Awaited<ReturnType<typeof oneOfEach>>;
  let stranger: Awaited<ReturnType<typeof oneOfEach>>;

  beforeAll(async () => {
    const names = { alice: "hugo", follower: "hana", stranger: "hank" };
    ({ alice: hugo, follower: hana, stranger: hank } = await cast(server, names));
    // hugo follows hank, so hank's followers-only note is seen by hugo, never by hana.
    await follow(hugo, "hank");
    own = await oneOfEach(hana, hugo, "hana");
    followed = await oneOfEach(hugo, hana, "hugo");
    stranger = await oneOfEach(hank, hana, "hank");
  });

  it("answers the caller's and its followees' public, home and followers notes, newest first; no direct ones, no strangers'", async () => {
    const ids = await timelineIds("/timeline/home", hana);
    expect(ids).toEqual(newestFirst(own.pub, own.home, own.followers, followed.pub, followed.home, followed.followers));
    for (const absent of [own.direct, followed.direct, ...Object.values(stranger)])
      expect(ids).not.toContain(absent.id);
  });

  it("gives every item the full Note shape: reactions and the author summary", async () => {
    const reacted = await server.request("POST", `/notes/${followed.pub.id}/reaction`, {
      body: { emoji: "👍" },
      token: hank.token,
    });
    expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
    const answer = await get("/timeline/home", hana);
    expect(answer.status).toBe(200);
    expectFullNotes(answer.body);
    const profile = (await get("/accounts/hugo")).body;
    expect(answer.body.find((n: Item) => n.id === followed.pub.id)).toEqual({
      id: followed.pub.id,
      content: "hugo public",
      cw_comment: "",
      visibility: "public",
      created_at: followed.pub.created_at,
      attachment_files: [],
      reactions: [{ emoji: "👍", reacted_by: hank.id }],
      reaction_count: 1,
      reaction_counts: { "👍": 1 },
      author: {
        id: hugo.id,
        name: qualified("hugo"),
        display_name: profile.nickname,
        bio: profile.bio,
        avatar: "",
        header: "",
        followed_count: 1,
        following_count: 1,
      },
    });
    const mine = answer.body.find((n: Item) => n.id === own.followers.id);
    expect(mine).toMatchObject({ content: "hana followers", visibility: "followers", reactions: [] });
    expect(mine.author).toMatchObject({ id: hana.id, name: qualified("hana") });
  });

  it("is served as /timeline, under /v0 and with a trailing slash alike", async () => {
    const expected = await timelineIds("/timeline/home", hana);
    for (const url of [
      "/timeline",
      "/timeline/",
      "/timeline/home/",
      "/v0/timeline/home",
      "/v0/timeline",
      "/v0/timeline/home/",
    ]) {
      expect(await timelineIds(url, hana), url).toEqual(expected);
    }
  });

  it("requires credentials: 401 UNAUTHORIZED (with WWW-Authenticate), also at /timeline and /v0", async () => {
    for (const url of ["/timeline/home", "/timeline", "/v0/timeline/home", "/timeline/home?before_id=1"]) {
      expectUnauthorized(await get(url), "UNAUTHORIZED");
    }
    expectUnauthorized(await get("/timeline/home", { token: "not-a-token" }), "INVALID_TOKEN");
  });

  it("answers 200 [] when there is nothing at all, and 404 NOTHING_LEFT with a before_id", async () => {
    const quiet = await account(server, "quiet");
    const answer = await get("/timeline/home", quiet);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: [] });
    expectError(await get(`/timeline/home?before_id=${own.pub.id}`, quiet), 404, "NOTHING_LEFT");
  });

  it("shows a followed account's followers-only note to the follower only", async () => {
    expect(await timelineIds("/timeline/home", hugo)).toContain(stranger.followers.id);
    expect(await timelineIds("/timeline/home", hana)).not.toContain(stranger.followers.id);
  });
});

describe("GET /timeline/global", () => {
  let gia: TestAccount;
  let gil: TestAccount;
  let made: Awaited<ReturnType<typeof oneOfEach>>;

  beforeAll(async () => {
    ({ alice: gia, follower: gil } = await cast(server, { alice: "gia", follower: "gil" }));
    made = await oneOfEach(gia, gil, "gia");
  });

  it.each([
    ["anonymous", undefined],
    ["the author", "gia"],
    ["a follower", "gil"],
  ])("shows public notes only to %s: not home, followers or direct ones", async (_, name) => {
    const who = name === "gia" ? gia : name === "gil" ? gil : undefined;
    const answer = await get("/timeline/global", who);
    expect(answer.status).toBe(200);
    const items: Item[] = answer.body;
    expect(items.length).toBeGreaterThan(0);
    expect(items.length).toBeLessThanOrEqual(20);
    expect(items[0].id).toBe(made.pub.id);
    expect(items.every((n) => n.visibility === "public")).toBe(true);
    const ids = idsOf(answer);
    for (const absent of [made.home, made.followers, made.direct]) expect(ids).not.toContain(absent.id);
    expectNewestFirst(ids);
    expectFullNotes(items);
    expect(items[0].author).toMatchObject({ id: gia.id, name: qualified("gia") });
  });

  it("is served under /v0 and with a trailing slash alike", async () => {
    const expected = await timelineIds("/timeline/global");
    for (const url of ["/timeline/global/", "/v0/timeline/global", "/v0/timeline/global/"]) {
      expect(await timelineIds(url), url).toEqual(expected);
    }
  });

  it("answers 400 INVALID_TIMELINE_TYPE for another type, with or without credentials", async () => {
    for (const url of ["/timeline/other", "/v0/timeline/other", "/timeline/Global", "/timeline/local"]) {
      expectError(await get(url), 400, "INVALID_TIMELINE_TYPE");
      expectError(await get(url, gia), 400, "INVALID_TIMELINE_TYPE");
    }
  });
});

describe("paging by before_id", () => {
  let pat: TestAccount;
  /** pat's 45 notes, oldest first. */
  const notes: { id: string }[] = [];
  /** The 45 ids, newest first. */
  let all: string[];

  beforeAll(async () => {
    pat = await account(server, "pat");
    for (let i = 0; i < 45; i++) notes.push(await note(pat, { content: `page note ${i}` }));
    all = newestFirst(...notes);
  });

  it("pages an account timeline 20, 20, 5, then 404 NOTHING_LEFT before the oldest", async () => {
    const pages: string[][] = [];
    let url = "/timeline/accounts/pat";
    for (let i = 0; i < 3; i++) {
      const answer = await get(url);
      expect(answer.status).toBe(200);
      expectFullNotes(answer.body);
      const ids = idsOf(answer);
      pages.push(ids);
      url = `/timeline/accounts/pat?before_id=${ids[ids.length - 1]}`;
    }
    expect(pages.map((p) => p.length)).toEqual([20, 20, 5]);
    expect(pages.flat()).toEqual(all);
    expectError(await get(url), 404, "NOTHING_LEFT");
  });

  it("loses and repeats no note while new notes arrive between home pages; they stay out of older pages", async () => {
    const pages: string[][] = [];
    const arrived: string[] = [];
    let url = "/timeline/home";
    for (let i = 0; i < 3; i++) {
      const ids = await timelineIds(url, pat);
      pages.push(ids);
      arrived.push((await note(pat, { content: `arrived while paging ${i}` })).id);
      url = `/timeline/home?before_id=${ids[ids.length - 1]}`;
    }
    expect(pages.map((p) => p.length)).toEqual([20, 20, 5]);
    expect(pages.flat()).toEqual(all);
    expect(new Set(pages.flat()).size).toBe(45);
    for (const id of arrived) expect(pages.flat()).not.toContain(id);
    expectError(await get(url, pat), 404, "NOTHING_LEFT");

    // A fresh first page starts with the newcomers, newest first.
    const first = await timelineIds("/timeline/home", pat);
    expect(first).toEqual([...arrived].reverse().concat(all.slice(0, 17)));
  });

  it("with a before_id in between, gives only the notes older than it (the note itself excluded)", async () => {
    expect(await timelineIds(`/timeline/accounts/pat?before_id=${all[10]}`)).toEqual(all.slice(11, 31));
    expect(await timelineIds(`/timeline/home?before_id=${all[40]}`, pat)).toEqual(all.slice(41));
    // A before_id need not be a note's id.
    const between = (BigInt(all[40]) - 1n).toString();
    expect(await timelineIds(`/timeline/home?before_id=${between}`, pat)).toEqual(all.slice(41));
    // Older than everything: NOTHING_LEFT; newer than everything: the newest page.
    expectError(await get("/timeline/home?before_id=1", pat), 404, "NOTHING_LEFT");
    expectError(await get("/timeline/accounts/pat?before_id=0"), 404, "NOTHING_LEFT");
  });

  it.each(["9223372036854775807", "9223372036854775808", "18446744073709551615"])(
    "takes any 64-bit snowflake as before_id: %s, above every note, gives the newest page",
    async (big) => {
      const newest = await timelineIds("/timeline/home", pat);
      const answer = await get(`/timeline/home?before_id=${big}`, pat);
      expect({ status: answer.status, body: answer.status === 200 ? idsOf(answer) : answer.body }).toEqual({
        status: 200,
        body: newest,
      });
      expect((await get(`/timeline/accounts/pat?before_id=${big}`)).status).toBe(200);
    },
  );

  it("pages global by the same rule: 20 a page, strictly older, no overlap", async () => {
    const first = await timelineIds("/timeline/global");
    const second = await timelineIds(`/timeline/global?before_id=${first[19]}`);
    expect([first.length, second.length]).toEqual([20, 20]);
    expectNewestFirst([...first, ...second]);
    expectError(await get("/timeline/global?before_id=1", pat), 404, "NOTHING_LEFT");
  });

  it.each(BAD_BEFORE_IDS)("answers 400 INVALID_REQUEST for before_id=%j on every timeline", async (bad) => {
    const query = `before_id=${encodeURIComponent(bad)}`;
    expectError(await get(`/timeline/home?${query}`, pat), 400, "INVALID_REQUEST");
    expectError(await get(`/timeline?${query}`, pat), 400, "INVALID_REQUEST");
    expectError(await get(`/timeline/global?${query}`), 400, "INVALID_REQUEST");
    expectError(await get(`/timeline/accounts/pat?${query}`), 400, "INVALID_REQUEST");
    expectError(await get(`/timeline/conversations/${mod.id}?${query}`, pat), 400, "INVALID_REQUEST");
  });
});

describe("has_attachment and no_nsfw", () => {
  let fay: TestAccount;
  // n0 text; n1 a safe file; n2 an NSFW file; n3 both files; n4 text; n5 a file deleted since.
  let n: { id: string }[];

  beforeAll(async () => {
    fay = await account(server, "fay");
    const bytes = await image("png", 8, 8);
    const safe = await uploadFile(server, fay, bytes, "safe.png");
    const spicy = await uploadFile(server, fay, bytes, "spicy.png");
    const gone = await uploadFile(server, fay, bytes, "gone.png");
    n = [
      await note(fay, { content: "text only" }),
      await note(fay, { content: "safe file", attachment_file_ids: [safe.id] }),
      await note(fay, { content: "nsfw file", attachment_file_ids: [spicy.id] }),
      await note(fay, { content: "", attachment_file_ids: [safe.id, spicy.id] }),
      await note(fay, { content: "text again" }),
      await note(fay, { content: "file deleted", attachment_file_ids: [gone.id] }),
    ];
    const flagged = await server.request("PUT", `/drive/${spicy.id}`, { body: { nsfw: true }, token: fay.token });
    expect(flagged.status, JSON.stringify(flagged.body)).toBe(200);
    await expectNoContent(server.request("DELETE", `/drive/${gone.id}`, { token: fay.token }));
  });

  const cases: [string, number[]][] = [
    ["", [5, 4, 3, 2, 1, 0]],
    ["has_attachment=true", [3, 2, 1]],
    ["no_nsfw=true", [5, 4, 1, 0]],
    ["has_attachment=true&no_nsfw=true", [1]],
    ["has_attachment=false", [5, 4, 3, 2, 1, 0]],
    ["no_nsfw=false", [5, 4, 3, 2, 1, 0]],
    ["has_attachment=false&no_nsfw=false", [5, 4, 3, 2, 1, 0]],
    ["has_attachment=true&no_nsfw=false", [3, 2, 1]],
    ["has_attachment=false&no_nsfw=true", [5, 4, 1, 0]],
  ];

  it.each(cases)("on the account timeline and home: ?%s", async (query, expected) => {
    const ids = expected.map((i) => n[i].id);
    expect(await timelineIds(`/timeline/accounts/fay?${query}`)).toEqual(ids);
    expect(await timelineIds(`/timeline/accounts/${fay.id}?${query}`, fay)).toEqual(ids);
    expect(await timelineIds(`/timeline/home?${query}`, fay)).toEqual(ids);
  });

  it.each(cases)("on global: ?%s", async (query, expected) => {
    const answer = await get(`/timeline/global?${query}`);
    expect(answer.status).toBe(200);
    const items: Item[] = answer.body;
    expect(idsOf(answer).slice(0, expected.length)).toEqual(expected.map((i) => n[i].id));
    if (query.includes("has_attachment=true")) {
      expect(items.every((item) => item.attachment_files.length > 0)).toBe(true);
    }
    if (query.includes("no_nsfw=true")) {
      expect(items.every((item) => item.attachment_files.every((f: Item) => f.nsfw === false))).toBe(true);
    }
  });

  it("shows the live NSFW flag on the listed attachments", async () => {
    const answer = await get("/timeline/accounts/fay?has_attachment=true");
    expect(answer.status).toBe(200);
    expect(answer.body.map((item: Item) => item.attachment_files.map((f: Item) => [f.filename, f.nsfw]))).toEqual([
      [
        ["safe.png", false],
        ["spicy.png", true],
      ],
      [["spicy.png", true]],
      [["safe.png", false]],
    ]);
  });

  it("pages filtered timelines too: NOTHING_LEFT before the oldest match", async () => {
    expect(await timelineIds(`/timeline/accounts/fay?has_attachment=true&before_id=${n[3].id}`)).toEqual([
      n[2].id,
      n[1].id,
    ]);
    expectError(await get(`/timeline/accounts/fay?has_attachment=true&before_id=${n[1].id}`), 404, "NOTHING_LEFT");
    expectError(
      await get(`/timeline/home?has_attachment=true&no_nsfw=true&before_id=${n[1].id}`, fay),
      404,
      "NOTHING_LEFT",
    );
  });

  it.each(BAD_FLAGS)("answers 400 INVALID_REQUEST for has_attachment or no_nsfw = %j", async (bad) => {
    for (const param of ["has_attachment", "no_nsfw"]) {
      const query = `${param}=${encodeURIComponent(bad)}`;
      expectError(await get(`/timeline/home?${query}`, fay), 400, "INVALID_REQUEST");
      expectError(await get(`/timeline?${query}`, fay), 400, "INVALID_REQUEST");
      expectError(await get(`/timeline/global?${query}`), 400, "INVALID_REQUEST");
      expectError(await get(`/timeline/accounts/fay?${query}`), 400, "INVALID_REQUEST");
    }
  });
});

describe("GET /timeline/accounts/{id|name}", () => {
  let ava: TestAccount;
  let fan: TestAccount;
  let bea: TestAccount;
  let stu: TestAccount;
  let made: Awaited<ReturnType<typeof oneOfEach>>;

  beforeAll(async () => {
    const names = { alice: "ava", follower: "fan", bob: "bea", stranger: "stu" };
    ({ alice: ava, follower: fan, bob: bea, stranger: stu } = await cast(server, names));
    made = await oneOfEach(ava, bea, "ava");
  });

  it.each([
    ["the author", "ava", ["pub", "home", "followers"]],
    ["a follower", "fan", ["pub", "home", "followers"]],
    ["the direct note's recipient", "bea", ["pub", "home"]],
    ["a stranger", "stu", ["pub", "home"]],
    ["anonymous", "", ["pub", "home"]],
  ] as const)("shows %s exactly the notes it may see, never direct ones", async (_, name, keys) => {
    const who = { ava, fan, bea, stu }[name as "ava"] as TestAccount | undefined;
    const answer = await get("/timeline/accounts/ava", who);
    expect(answer.status).toBe(200);
    expect(idsOf(answer)).toEqual(newestFirst(...keys.map((k) => made[k])));
    expectFullNotes(answer.body);
    for (const item of answer.body) expect(item.author).toMatchObject({ id: ava.id, name: qualified("ava") });
  });

  it("takes the account's id, plain name, qualified name, any case, under /v0 and with a trailing slash", async () => {
    const expected = newestFirst(made.pub, made.home, made.followers);
    for (const segment of [ava.id, "ava", "AVA", qualified("ava"), encodeURIComponent(qualified("ava"))]) {
      for (const url of [`/timeline/accounts/${segment}`, `/v0/timeline/accounts/${segment}/`]) {
        expect(await timelineIds(url, fan), url).toEqual(expected);
      }
    }
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown id or name, or another host's name", async () => {
    for (const segment of [UNKNOWN_ID, "nobody-here", qualified("nobody-here"), "@ava@elsewhere.example"]) {
      expectError(await get(`/timeline/accounts/${segment}`), 404, "ACCOUNT_NOT_FOUND");
      expectError(await get(`/timeline/accounts/${segment}`, fan), 404, "ACCOUNT_NOT_FOUND");
    }
  });

  it("answers 200 [] for an account without notes, and 404 NOTHING_LEFT with a before_id", async () => {
    const answer = await get("/timeline/accounts/stu", ava);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: [] });
    expectError(await get(`/timeline/accounts/stu?before_id=${made.pub.id}`), 404, "NOTHING_LEFT");
  });

  it("refuses an account the owner blocks: 403 YOU_ARE_BLOCKED, by id and name; others and the blocker still read", async () => {
    await expectNoContent(server.request("POST", "/accounts/stu/block", { body: {}, token: ava.token }));
    for (const segment of ["ava", ava.id, qualified("ava")]) {
      expectError(await get(`/timeline/accounts/${segment}`, stu), 403, "YOU_ARE_BLOCKED");
      expectError(await get(`/timeline/accounts/${segment}?before_id=${made.pub.id}`, stu), 403, "YOU_ARE_BLOCKED");
    }
    expect(await timelineIds("/timeline/accounts/ava")).toEqual(newestFirst(made.pub, made.home));
    expect((await get("/timeline/accounts/stu", ava)).status).toBe(200);

    await expectNoContent(server.request("DELETE", "/accounts/stu/block", { body: {}, token: ava.token }));
    expect(await timelineIds("/timeline/accounts/ava", stu)).toEqual(newestFirst(made.pub, made.home));
  });
});

describe("frozen accounts", () => {
  let zed: TestAccount;
  let zoe: TestAccount;
  let made: Awaited<ReturnType<typeof oneOfEach>>;

  beforeAll(async () => {
    [zed, zoe] = await Promise.all([account(server, "zed"), account(server, "zoe")]);
    await follow(zoe, "zed");
    made = await oneOfEach(zed, zoe, "zed");
  });

  it("their notes leave every timeline for non-moderators; a moderator still sees them on the account timeline", async () => {
    const visible = newestFirst(made.pub, made.home, made.followers);
    expect(await timelineIds("/timeline/home", zoe)).toEqual(visible);
    expect(await timelineIds("/timeline/accounts/zed", zoe)).toEqual(visible);
    expect((await timelineIds("/timeline/global"))[0]).toBe(made.pub.id);
    expect(await timelineIds(`/timeline/conversations/${zed.id}`, zoe)).toEqual([made.direct.id]);

    await moderate("zed", "freeze");
    const zedIds = Object.values(made).map((m) => m.id);
    expect(await timelineIds("/timeline/home", zoe)).toEqual([]);
    for (const who of [zoe, undefined]) {
      expect(await timelineIds("/timeline/accounts/zed", who)).toEqual([]);
      expect(await timelineIds(`/timeline/accounts/${zed.id}`, who)).toEqual([]);
      const global = await timelineIds("/timeline/global", who);
      for (const id of zedIds) expect(global).not.toContain(id);
    }
    expect(await timelineIds(`/timeline/conversations/${zed.id}`, zoe)).toEqual([]);
    expect(await timelineIds("/timeline/accounts/zed", mod)).toEqual(newestFirst(made.pub, made.home));

    await moderate("zed", "unfreeze");
    expect(await timelineIds("/timeline/home", zoe)).toEqual(visible);
    expect(await timelineIds("/timeline/accounts/zed")).toEqual(newestFirst(made.pub, made.home));
  });
});

describe("GET /timeline/conversations", () => {
  let cora: TestAccount;
  let cal: TestAccount;
  let cid: TestAccount;
  let cy: TestAccount;
  let cox: TestAccount;
  const sent: Record<string, { id: string; created_at: string }> = {};
  let startedAt: number;

  async function direct(from: TestAccount, to: TestAccount, content: string) {
    sent[content] = await note(from, { content, visibility: "direct", send_to: to.id });
    return sent[content];
  }

  // biome-ignore lint/suspicious/noExplicitAny: conversation entries are read field by field
  async function conversationsOf(who: TestAccount): Promise<any[]> {
    const answer = await get("/timeline/conversations", who);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
  }

  const entry = (who: TestAccount, nickname: string, updatedAt: unknown, lastNote: string) => ({
    account: { accountId: who.id, accountName: qualified(who.name), nickname, avatar: "" },
    updatedAt,
    lastNoteId: sent[lastNote].id,
  });

  async function nicknameOf(name: string): Promise<string> {
    return (await get(`/accounts/${name}`)).body.nickname;
  }

  beforeAll(async () => {
    startedAt = Date.now() - 1000;
    [cora, cal, cid, cy, cox] = await Promise.all([
      account(server, "cora"),
      account(server, "cal"),
      account(server, "cid"),
      account(server, "cy"),
      account(server, "cox"),
    ]);
    await direct(cora, cal, "cora to cal");
    await direct(cid, cora, "cid to cora");
    await note(cy, { content: "@cora hello in public" });
    await note(cora, { content: "@cy hello back, followers only", visibility: "followers" });
    await note(cora, { content: "@cal also in public" });
    await direct(cal, cora, "cal to cora");
    await direct(cid, cox, "cid to cox");
  });

  it("lists one entry per partner, exactly {account, updatedAt, lastNoteId}, most recent exchange first, sent or received", async () => {
    const list = await conversationsOf(cora);
    expect(list).toEqual([
      entry(cal, await nicknameOf("cal"), expect.stringMatching(ISO_MS), "cal to cora"),
      entry(cid, await nicknameOf("cid"), expect.stringMatching(ISO_MS), "cid to cora"),
    ]);
    for (const item of list) {
      // lastNoteId (extension): the newest direct note between the two, which before_id takes.
      expect(sorted(item)).toEqual(["account", "lastNoteId", "updatedAt"]);
      expect(sorted(item.account)).toEqual(["accountId", "accountName", "avatar", "nickname"]);
    }
    const [calAt, cidAt] = list.map((e) => Date.parse(e.updatedAt));
    expect(calAt).toBeGreaterThanOrEqual(cidAt);
    expect(calAt).toBeGreaterThanOrEqual(startedAt);
    expect(calAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(Math.abs(calAt - Date.parse(sent["cal to cora"].created_at))).toBeLessThan(2000);
    expect(Math.abs(cidAt - Date.parse(sent["cid to cora"].created_at))).toBeLessThan(2000);
  });

  it("shows each side its partners: the sender and the recipient alike", async () => {
    expect(await conversationsOf(cal)).toEqual([
      entry(cora, await nicknameOf("cora"), expect.stringMatching(ISO_MS), "cal to cora"),
    ]);
    expect((await conversationsOf(cid)).map((e) => e.account.accountId)).toEqual([cox.id, cora.id]);
    expect((await conversationsOf(cox)).map((e) => e.account.accountId)).toEqual([cid.id]);
  });

  it("leaves out partners of public or followers notes only: 200 [] with none", async () => {
    expect(await conversationsOf(cy)).toEqual([]);
  });

  it("moves a partner to the front on a new exchange, and updates its updatedAt", async () => {
    const before = await conversationsOf(cora);
    await direct(cora, cid, "cora to cid");
    const after = await conversationsOf(cora);
    expect(after.map((e) => e.account.accountId)).toEqual([cid.id, cal.id]);
    expect(Date.parse(after[0].updatedAt)).toBeGreaterThanOrEqual(Date.parse(before[0].updatedAt));
    expect(after[1]).toEqual(before[0]);
  });

  it("is served under /v0 and with a trailing slash alike", async () => {
    const expected = await conversationsOf(cora);
    for (const url of ["/timeline/conversations/", "/v0/timeline/conversations", "/v0/timeline/conversations/"]) {
      const answer = await get(url, cora);
      expect({ status: answer.status, body: answer.body }, url).toEqual({ status: 200, body: expected });
    }
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    expectUnauthorized(await get("/timeline/conversations"), "UNAUTHORIZED");
    expectUnauthorized(await get(`/timeline/conversations/${cora.id}`), "UNAUTHORIZED");
  });

  describe("GET /timeline/conversations/{account_id}", () => {
    it("answers the direct notes between the two, both directions, newest first, in the full Note shape", async () => {
      const answer = await get(`/timeline/conversations/${cal.id}`, cora);
      expect(answer.status).toBe(200);
      expect(idsOf(answer)).toEqual([sent["cal to cora"].id, sent["cora to cal"].id]);
      for (const item of answer.body) {
        expectShape(FullNoteShape, item, ["send_to"]);
        expect(item.visibility).toBe("direct");
      }
      expect(answer.body[0]).toMatchObject({
        content: "cal to cora",
        send_to: cora.id,
        reactions: [],
        author: { id: cal.id, name: qualified("cal") },
      });
      expect(answer.body[1]).toMatchObject({ content: "cora to cal", send_to: cal.id, author: { id: cora.id } });
      // The other side sees the same exchange.
      expect(await timelineIds(`/timeline/conversations/${cora.id}`, cal)).toEqual(idsOf(answer));
      expect(await timelineIds(`/v0/timeline/conversations/${cal.id}/`, cora)).toEqual(idsOf(answer));
    });

    it("leaves out direct notes with third parties and non-direct notes", async () => {
      expect(await timelineIds(`/timeline/conversations/${cid.id}`, cora)).toEqual([
        sent["cora to cid"].id,
        sent["cid to cora"].id,
      ]);
      expect(await timelineIds(`/timeline/conversations/${cid.id}`, cox)).toEqual([sent["cid to cox"].id]);
      expect(await timelineIds(`/timeline/conversations/${cy.id}`, cora)).toEqual([]);
    });

    it("pages by before_id: 20, then the rest, then 404 NOTHING_LEFT", async () => {
      const [pia, pip] = await Promise.all([account(server, "pia"), account(server, "pip")]);
      const made: string[] = [];
      for (let i = 0; i < 23; i++) {
        const [from, to] = i % 2 === 0 ? [pia, pip] : [pip, pia];
        made.push((await note(from, { content: `dm ${i}`, visibility: "direct", send_to: to.id })).id);
      }
      const all = [...made].reverse();
      const first = await timelineIds(`/timeline/conversations/${pip.id}`, pia);
      expect(first).toEqual(all.slice(0, 20));
      const second = await timelineIds(`/timeline/conversations/${pip.id}?before_id=${first[19]}`, pia);
      expect(second).toEqual(all.slice(20));
      expectError(await get(`/timeline/conversations/${pip.id}?before_id=${second[2]}`, pia), 404, "NOTHING_LEFT");
      expect(await timelineIds(`/timeline/conversations/${pia.id}?before_id=${all[5]}`, pip)).toEqual(all.slice(6, 23));
      expectError(await get(`/timeline/conversations/${cy.id}?before_id=${all[0]}`, pia), 404, "NOTHING_LEFT");
    });

    it("answers 404 ACCOUNT_NOT_FOUND for an unknown account", async () => {
      expectError(await get(`/timeline/conversations/${UNKNOWN_ID}`, cora), 404, "ACCOUNT_NOT_FOUND");
      expectError(await get(`/v0/timeline/conversations/${UNKNOWN_ID}/`, cora), 404, "ACCOUNT_NOT_FOUND");
    });
  });
});

describe("visibility on every timeline", () => {
  let vic: TestAccount;
  let val: TestAccount;
  let vin: TestAccount;
  let made: Awaited<ReturnType<typeof oneOfEach>>;

  beforeAll(async () => {
    [vic, val, vin] = await Promise.all([account(server, "vic"), account(server, "val"), account(server, "vin")]);
    await follow(val, "vic");
    made = await oneOfEach(vic, val, "vic");
  });

  it("shows a followers-only note on a follower's home and account views, not to a stranger, never on global", async () => {
    expect(await timelineIds("/timeline/home", val)).toContain(made.followers.id);
    expect(await timelineIds("/timeline/accounts/vic", val)).toContain(made.followers.id);
    expect(await timelineIds("/timeline/accounts/vic", vin)).not.toContain(made.followers.id);
    expect(await timelineIds("/timeline/accounts/vic")).not.toContain(made.followers.id);
    for (const who of [vic, val, vin, undefined]) {
      expect(await timelineIds("/timeline/global", who)).not.toContain(made.followers.id);
    }
  });

  it("shows a direct note only in the conversation, not on home or the account timeline, even to its recipient", async () => {
    expect(await timelineIds("/timeline/home", val)).not.toContain(made.direct.id);
    expect(await timelineIds("/timeline/home", vic)).not.toContain(made.direct.id);
    expect(await timelineIds("/timeline/accounts/vic", val)).not.toContain(made.direct.id);
    expect(await timelineIds(`/timeline/conversations/${vic.id}`, val)).toEqual([made.direct.id]);
    expect(await timelineIds(`/timeline/conversations/${vic.id}`, vin)).toEqual([]);
    expect(await timelineIds(`/timeline/conversations/${val.id}`, vin)).toEqual([]);
  });

  it("takes vic's notes off val's home after unfollowing, and the followers-only one off val's account view", async () => {
    await expectNoContent(server.request("DELETE", "/accounts/vic/follow", { body: {}, token: val.token }));
    const home = await timelineIds("/timeline/home", val);
    for (const m of Object.values(made)) expect(home).not.toContain(m.id);
    expect(await timelineIds("/timeline/accounts/vic", val)).toEqual(newestFirst(made.pub, made.home));
    await follow(val, "vic");
    expect(await timelineIds("/timeline/home", val)).toEqual(newestFirst(made.pub, made.home, made.followers));
  });

  it("gives a pending follower of a locked account neither its home notes nor its followers-only ones", async () => {
    const [lou, rae] = await Promise.all([account(server, "lou"), account(server, "rae")]);
    const locked = await server.request("PATCH", "/accounts/lou", { body: { locked: true }, token: lou.token });
    expect(locked.status, JSON.stringify(locked.body)).toBe(200);
    expect(await follow(rae, "lou")).toEqual({ pending: true });
    const pub = await note(lou, { content: "lou public" });
    const followers = await note(lou, { content: "lou followers", visibility: "followers" });
    expect(await timelineIds("/timeline/home", rae)).toEqual([]);
    expect(await timelineIds("/timeline/accounts/lou", rae)).toEqual([pub.id]);

    await expectNoContent(server.request("POST", "/follow_requests/rae/accept", { body: {}, token: lou.token }));
    expect(await timelineIds("/timeline/home", rae)).toEqual([followers.id, pub.id]);
    expect(await timelineIds("/timeline/accounts/lou", rae)).toEqual([followers.id, pub.id]);
  });

  it("takes a blocker's notes off the blocked account's home (blocking ends follows)", async () => {
    await expectNoContent(server.request("POST", "/accounts/val/block", { body: {}, token: vic.token }));
    const home = await timelineIds("/timeline/home", val);
    for (const m of Object.values(made)) expect(home).not.toContain(m.id);
    expectError(await get("/timeline/accounts/vic", val), 403, "YOU_ARE_BLOCKED");
  });
});
