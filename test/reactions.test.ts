// Reactions and bookmarks over REST (docs/notes.md#reactions,
// docs/notes.md#bookmarks, docs/notifications.md#types):
// the emoji rule, one reaction per account per note (also under concurrency), blocks,
// visibility, the `reacted` notification, idempotent bookmarks and GET /bookmarks paging.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addCustomEmoji } from "../src/domain/emoji/service.ts";
import * as act from "./support/actions.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { expectShape, FullNoteShape } from "./support/shapes.ts";

const UNKNOWN_NOTE = "1234567890123456789";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;
let dave: TestAccount;
let moderator: TestAccount;
let blobcat: { id: string; alias: string };
let emojiDir: string;

beforeAll(async () => {
  server = await startTestServer();
  [alice, bob, carol, dave, moderator] = await Promise.all([
    account(server, "alice"),
    account(server, "bob"),
    account(server, "carol"),
    account(server, "dave"),
    account(server, "moderator", "moderator"),
  ]);
  emojiDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-emoji-"));
  const png = path.join(emojiDir, "blobcat.png");
  fs.writeFileSync(png, await image("png", 64, 64));
  const row = await addCustomEmoji(server.services, "blobcat", png);
  blobcat = { id: row.id.toString(), alias: row.alias };
});
afterAll(async () => {
  await server?.close();
  if (emojiDir) fs.rmSync(emojiDir, { recursive: true, force: true });
});

const qualified = (name: string) => `@${name}@${HOST}`;

let seq = 0;
/** A fresh account for a test that needs one nobody else touches. */
function fresh(prefix: string): Promise<TestAccount> {
  seq += 1;
  return account(server, `${prefix}${seq}`);
}

const postNote = async (who: TestAccount, content: string, visibility = "public") =>
  (await act.post(server, who, { content, visibility })).id;

function react(who: TestAccount | undefined, noteId: string, emoji: unknown): Promise<Answer> {
  return server.request("POST", `/notes/${noteId}/reaction`, { token: who?.token, body: { emoji } });
}

function unreact(who: TestAccount | undefined, noteId: string): Promise<Answer> {
  return server.request("DELETE", `/notes/${noteId}/reaction`, { token: who?.token });
}

function bookmark(who: TestAccount | undefined, noteId: string): Promise<Answer> {
  return server.request("POST", `/notes/${noteId}/bookmark`, { token: who?.token, body: {} });
}

function unbookmark(who: TestAccount | undefined, noteId: string): Promise<Answer> {
  return server.request("DELETE", `/notes/${noteId}/bookmark`, { token: who?.token });
}

function bookmarks(who: TestAccount | undefined, beforeId?: string): Promise<Answer> {
  const query = beforeId === undefined ? "" : `?before_id=${encodeURIComponent(beforeId)}`;
  return server.request("GET", `/bookmarks${query}`, { token: who?.token });
}

function getNote(who: TestAccount | undefined, noteId: string): Promise<Answer> {
  return server.request("GET", `/notes/${noteId}`, { token: who?.token });
}

async function follow(who: TestAccount, target: TestAccount): Promise<void> {
  expect(await act.follow(server, who, target)).toEqual({ pending: false });
}

async function notificationsOf(who: TestAccount) {
  const answer = await server.request("GET", "/notifications?limit=50", { token: who.token });
  expect(answer.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: notifications are read field by field
  return answer.body.notifications as any[];
}

function expectEmpty(answer: Answer, status = 204) {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: "" });
}

/** A full note (docs/notes.md#shape): reactions and author present, author a complete summary. */
// biome-ignore lint/suspicious/noExplicitAny: a note body from an answer
function expectFullNote(note: any, id: string, author: TestAccount, content: string) {
  expectShape(FullNoteShape, note);
  expect(note).toMatchObject({ id, content, cw_comment: "", attachment_files: [] });
  expect(Array.isArray(note.reactions)).toBe(true);
  expect(note.author).toMatchObject({ id: author.id, name: qualified(author.name) });
  expect(typeof note.author.display_name).toBe("string");
  expect(typeof note.author.followed_count).toBe("number");
  expect(typeof note.author.following_count).toBe("number");
}

// biome-ignore lint/suspicious/noExplicitAny: reactions from an answer
const sortReactions = (list: any[]) =>
  [...list].sort((a, b) => `${a.reacted_by}${a.emoji}`.localeCompare(`${b.reacted_by}${b.emoji}`));

describe("POST /notes/{id}/reaction: the emoji rule (docs/notes.md#reactions)", () => {
  const valid: [string, string][] = [
    ["a plain emoji", "👍"],
    ["a skin-tone modifier sequence", "👍🏽"],
    ["a ZWJ family sequence", "👨‍👩‍👧‍👦"],
    ["the rainbow flag (ZWJ with VS16)", "🏳️‍🌈"],
    ["a regional-indicator flag", "🇯🇵"],
    ["a keycap sequence", "1️⃣"],
    ["an emoji with VS16", "❤️"],
  ];

  it.each(valid)("accepts %s (%s) and answers the full note with the reaction", async (_label, emoji) => {
    const noteId = await postNote(alice, `react with ${emoji}`);
    const answer = await react(bob, noteId, emoji);
    expect(answer.status).toBe(200);
    expectFullNote(answer.body, noteId, alice, `react with ${emoji}`);
    expect(answer.body.reactions).toEqual([{ emoji, reacted_by: bob.id }]);
    const seen = await getNote(carol, noteId);
    expect(seen.body.reactions).toEqual([{ emoji, reacted_by: bob.id }]);
  });

  it("accepts the custom emoji <:blobcat:ID> of an existing custom emoji", async () => {
    const noteId = await postNote(alice, "custom");
    const emoji = `<:${blobcat.alias}:${blobcat.id}>`;
    const answer = await react(bob, noteId, emoji);
    expect(answer.status).toBe(200);
    expectFullNote(answer.body, noteId, alice, "custom");
    expect(answer.body.reactions).toEqual([{ emoji, reacted_by: bob.id }]);
  });

  const invalid: [string, () => string][] = [
    ["two emoji", () => "👍👍"],
    ["a letter", () => "a"],
    ["the empty string", () => ""],
    ["an emoji with a trailing space", () => "👍 "],
    ["a shortcode", () => ":smile:"],
    ["a custom emoji whose id does not exist", () => "<:blobcat:1>"],
    ["an existing custom emoji's id under a wrong alias", () => `<:nope:${blobcat.id}>`],
    ["a lone regional indicator", () => "🇯"],
    ["a digit without the keycap", () => "1"],
  ];

  it.each(invalid)("refuses %s with 400 EMOJI_NOT_FOUND and records nothing", async (_label, emoji) => {
    const noteId = await postNote(alice, "no reaction here");
    expectError(await react(bob, noteId, emoji()), 400, "EMOJI_NOT_FOUND");
    const seen = await getNote(bob, noteId);
    expect(seen.body.reactions).toEqual([]);
  });

  it("refuses a body without emoji, or a non-string emoji, with 400 INVALID_REQUEST", async () => {
    const noteId = await postNote(alice, "bad bodies");
    const missing = await server.request("POST", `/notes/${noteId}/reaction`, { token: bob.token, body: {} });
    expectError(missing, 400, "INVALID_REQUEST");
    expectError(await react(bob, noteId, 42), 400, "INVALID_REQUEST");
    expect((await getNote(bob, noteId)).body.reactions).toEqual([]);
  });
});

describe("One reaction per account per note (docs/notes.md#reactions)", () => {
  it("refuses a second reaction by the same account with 400 ALREADY_REACTED, keeping the first", async () => {
    const noteId = await postNote(alice, "react twice");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expectError(await react(bob, noteId, "👍"), 400, "ALREADY_REACTED");
    expectError(await react(bob, noteId, "🎉"), 400, "ALREADY_REACTED");
    expect((await getNote(bob, noteId)).body.reactions).toEqual([{ emoji: "👍", reacted_by: bob.id }]);
  });

  it("20 concurrent reactions by one account: exactly one 200, the rest ALREADY_REACTED, one reaction", async () => {
    const noteId = await postNote(alice, "race");
    const answers = await Promise.all(Array.from({ length: 20 }, () => react(carol, noteId, "🔥")));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    for (const answer of answers.filter((a) => a.status !== 200)) expectError(answer, 400, "ALREADY_REACTED");
    expect((await getNote(carol, noteId)).body.reactions).toEqual([{ emoji: "🔥", reacted_by: carol.id }]);
    expect(await server.services.db.reaction.count({ where: { noteId: BigInt(noteId) } })).toBe(1);
  });

  it("shows the reactions of several accounts, each with its reacted_by", async () => {
    const noteId = await postNote(alice, "many reactions");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expect((await react(carol, noteId, "❤️")).status).toBe(200);
    const last = await react(dave, noteId, `<:blobcat:${blobcat.id}>`);
    expect(last.status).toBe(200);
    const expected = [
      { emoji: "👍", reacted_by: bob.id },
      { emoji: "❤️", reacted_by: carol.id },
      { emoji: `<:blobcat:${blobcat.id}>`, reacted_by: dave.id },
    ];
    expect(sortReactions(last.body.reactions)).toEqual(sortReactions(expected));
    const seen = await getNote(undefined, noteId);
    expect(seen.status).toBe(200);
    expect(sortReactions(seen.body.reactions)).toEqual(sortReactions(expected));
  });

  it("lets the author react to its own note", async () => {
    const noteId = await postNote(alice, "self reaction");
    const answer = await react(alice, noteId, "😀");
    expect(answer.status).toBe(200);
    expect(answer.body.reactions).toEqual([{ emoji: "😀", reacted_by: alice.id }]);
  });
});

describe("DELETE /notes/{id}/reaction", () => {
  it("removes one's reaction with 204, then 400 NOT_REACTED; reacting again works", async () => {
    const noteId = await postNote(alice, "take it back");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expect((await react(carol, noteId, "🎉")).status).toBe(200);
    expectEmpty(await unreact(bob, noteId));
    expect((await getNote(bob, noteId)).body.reactions).toEqual([{ emoji: "🎉", reacted_by: carol.id }]);
    expectError(await unreact(bob, noteId), 400, "NOT_REACTED");
    const again = await react(bob, noteId, "😮");
    expect(again.status).toBe(200);
    expect(sortReactions(again.body.reactions)).toEqual(
      sortReactions([
        { emoji: "🎉", reacted_by: carol.id },
        { emoji: "😮", reacted_by: bob.id },
      ]),
    );
  });

  it("gives 400 NOT_REACTED to an account that never reacted, even when others did", async () => {
    const noteId = await postNote(alice, "never reacted");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expectError(await unreact(dave, noteId), 400, "NOT_REACTED");
    expect((await getNote(bob, noteId)).body.reactions).toEqual([{ emoji: "👍", reacted_by: bob.id }]);
  });

  it("gives 404 NOTE_NOT_FOUND for an unknown or malformed note id, to react and unreact", async () => {
    for (const id of [UNKNOWN_NOTE, "not-a-note"]) {
      expectError(await react(bob, id, "👍"), 404, "NOTE_NOT_FOUND");
      expectError(await unreact(bob, id), 404, "NOTE_NOT_FOUND");
    }
  });
});

describe("Visibility and blocks", () => {
  it("gives 404 NOTE_NOT_FOUND for a followers-only note of an account the caller does not follow", async () => {
    const author = await fresh("hidden");
    const follower = await fresh("follower");
    await follow(follower, author);
    const noteId = await postNote(author, "followers only", "followers");
    expectError(await react(dave, noteId, "👍"), 404, "NOTE_NOT_FOUND");
    expectError(await unreact(dave, noteId), 404, "NOTE_NOT_FOUND");
    expectError(await bookmark(dave, noteId), 404, "NOTE_NOT_FOUND");
    expectError(await unbookmark(dave, noteId), 404, "NOTE_NOT_FOUND");
    expect(await server.services.db.reaction.count({ where: { noteId: BigInt(noteId) } })).toBe(0);
    expect(await server.services.db.bookmark.count({ where: { noteId: BigInt(noteId) } })).toBe(0);
    // A follower sees it and may react and bookmark.
    const reacted = await react(follower, noteId, "👍");
    expect(reacted.status).toBe(200);
    expectFullNote(reacted.body, noteId, author, "followers only");
    expect((await bookmark(follower, noteId)).status).toBe(200);
  });

  it("gives 404 NOTE_NOT_FOUND for a direct note addressed to someone else", async () => {
    const author = await fresh("sender");
    const answer = await server.request("POST", "/notes", {
      token: author.token,
      body: { content: "psst", visibility: "direct", send_to: carol.id },
    });
    expect(answer.status).toBe(201);
    const noteId = answer.body.id as string;
    expectError(await react(dave, noteId, "👍"), 404, "NOTE_NOT_FOUND");
    expectError(await bookmark(dave, noteId), 404, "NOTE_NOT_FOUND");
    expect((await react(carol, noteId, "👍")).status).toBe(200);
  });

  it("gives 403 YOU_ARE_BLOCKED when the note's author blocked the caller; unblocking lifts it", async () => {
    const author = await fresh("blocker");
    const blocked = await fresh("blocked");
    const noteId = await postNote(author, "not for you");
    const blocking = await server.request("POST", `/accounts/${blocked.name}/block`, { token: author.token, body: {} });
    expectEmpty(blocking);
    expectError(await react(blocked, noteId, "👍"), 403, "YOU_ARE_BLOCKED");
    expect(await server.services.db.reaction.count({ where: { noteId: BigInt(noteId) } })).toBe(0);
    expect((await notificationsOf(author)).filter((n) => n.type === "reacted")).toEqual([]);
    // Others still react.
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    const unblocking = await server.request("DELETE", `/accounts/${blocked.name}/block`, { token: author.token });
    expectEmpty(unblocking);
    expect((await react(blocked, noteId, "👍")).status).toBe(200);
  });
});

describe("The reacted notification (docs/notifications.md#types, docs/notes.md#reactions)", () => {
  it("tells the note's author: noteId, content = the emoji, actor = the reacting account", async () => {
    const author = await fresh("famous");
    const noteId = await postNote(author, "notify me");
    expect((await react(bob, noteId, "👍🏽")).status).toBe(200);
    const reacted = (await notificationsOf(author)).filter((n) => n.type === "reacted");
    expect(reacted).toHaveLength(1);
    expect(reacted[0]).toEqual({
      id: expect.stringMatching(/^[0-9]{1,20}$/),
      type: "reacted",
      actor: {
        type: "account",
        account: { id: bob.id, name: qualified(bob.name), nickname: expect.any(String), avatar: expect.any(String) },
      },
      noteId,
      content: "👍🏽",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    // The reacting account hears nothing of it.
    expect((await notificationsOf(bob)).filter((n) => n.type === "reacted" && n.noteId === noteId)).toEqual([]);
  });

  it("carries the custom emoji notation as content", async () => {
    const author = await fresh("customfan");
    const noteId = await postNote(author, "custom notify");
    const emoji = `<:blobcat:${blobcat.id}>`;
    expect((await react(carol, noteId, emoji)).status).toBe(200);
    const reacted = (await notificationsOf(author)).filter((n) => n.type === "reacted");
    expect(reacted.map((n) => ({ noteId: n.noteId, content: n.content, actor: n.actor.account.id }))).toEqual([
      { noteId, content: emoji, actor: carol.id },
    ]);
  });

  it("sends none when reacting to one's own note", async () => {
    const author = await fresh("selfish");
    const noteId = await postNote(author, "my own");
    expect((await react(author, noteId, "👍")).status).toBe(200);
    expect((await notificationsOf(author)).filter((n) => n.type === "reacted")).toEqual([]);
  });

  it("sends none for a refused reaction (ALREADY_REACTED, EMOJI_NOT_FOUND)", async () => {
    const author = await fresh("quiet");
    const noteId = await postNote(author, "once only");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expectError(await react(bob, noteId, "👍"), 400, "ALREADY_REACTED");
    expectError(await react(carol, noteId, "a"), 400, "EMOJI_NOT_FOUND");
    const reacted = (await notificationsOf(author)).filter((n) => n.type === "reacted");
    expect(reacted.map((n) => n.actor.account.id)).toEqual([bob.id]);
  });
});

describe("POST and DELETE /notes/{id}/bookmark", () => {
  it("bookmarks with 200 and the full note (reactions and author); twice is 200 again, listed once", async () => {
    const reader = await fresh("reader");
    const noteId = await postNote(alice, "worth keeping");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    const first = await bookmark(reader, noteId);
    expect(first.status).toBe(200);
    expectFullNote(first.body, noteId, alice, "worth keeping");
    expect(first.body.reactions).toEqual([{ emoji: "👍", reacted_by: bob.id }]);
    const second = await bookmark(reader, noteId);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const listed = await bookmarks(reader);
    expect(listed.status).toBe(200);
    expect(listed.body.map((n: { id: string }) => n.id)).toEqual([noteId]);
  });

  it("removes with 204, and again with 204; the note leaves the list", async () => {
    const reader = await fresh("reader");
    const noteId = await postNote(alice, "not so worth keeping");
    expect((await bookmark(reader, noteId)).status).toBe(200);
    expectEmpty(await unbookmark(reader, noteId));
    expectEmpty(await unbookmark(reader, noteId));
    expect(await bookmarks(reader)).toMatchObject({ status: 200, body: [] });
    // Never bookmarked at all: 204 too.
    expectEmpty(await unbookmark(reader, await postNote(alice, "never kept")));
  });

  it("gives 404 NOTE_NOT_FOUND for an unknown or malformed note id", async () => {
    for (const id of [UNKNOWN_NOTE, "not-a-note"]) {
      expectError(await bookmark(bob, id), 404, "NOTE_NOT_FOUND");
      expectError(await unbookmark(bob, id), 404, "NOTE_NOT_FOUND");
    }
  });
});

describe("GET /bookmarks (extension, paged like a timeline: docs/notes.md#bookmarks)", () => {
  it("answers 200 [] with no bookmarks, and 404 NOTHING_LEFT with before_id", async () => {
    const reader = await fresh("empty");
    const answer = await bookmarks(reader);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: [] });
    expectError(await bookmarks(reader, UNKNOWN_NOTE), 404, "NOTHING_LEFT");
  });

  it("refuses a before_id that is not a snowflake with 400 INVALID_REQUEST", async () => {
    for (const bad of ["abc", "12x", "-1", "1.5", "99999999999999999999999"]) {
      expectError(await bookmarks(bob, bad), 400, "INVALID_REQUEST");
    }
  });

  it("lists full notes newest note first, 20 a page; before_id pages on; then NOTHING_LEFT", async () => {
    const reader = await fresh("collector");
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await postNote(i % 2 ? alice : bob, `keep ${i}`));
    // Bookmarked in an order unlike the notes' own: the list follows the notes' ids.
    const order = [...ids.slice(10), ...ids.slice(0, 10)].reverse();
    for (const id of order) expect((await bookmark(reader, id)).status).toBe(200);
    const newestFirst = [...ids].reverse();

    const page1 = await bookmarks(reader);
    expect(page1.status).toBe(200);
    expect(page1.body.map((n: { id: string }) => n.id)).toEqual(newestFirst.slice(0, 20));
    page1.body.forEach((note: { id: string }, k: number) => {
      const i = 24 - k;
      expectFullNote(note, ids[i], i % 2 ? alice : bob, `keep ${i}`);
    });

    const page2 = await bookmarks(reader, page1.body[19].id);
    expect(page2.status).toBe(200);
    expect(page2.body.map((n: { id: string }) => n.id)).toEqual(newestFirst.slice(20));

    expectError(await bookmarks(reader, page2.body[4].id), 404, "NOTHING_LEFT");
    // before_id in the middle: only older ones.
    const middle = await bookmarks(reader, ids[3]);
    expect(middle.body.map((n: { id: string }) => n.id)).toEqual([ids[2], ids[1], ids[0]]);
  });

  it("lists only the caller's bookmarks", async () => {
    const one = await fresh("mine");
    const two = await fresh("yours");
    const a = await postNote(alice, "for one");
    const b = await postNote(alice, "for two");
    expect((await bookmark(one, a)).status).toBe(200);
    expect((await bookmark(two, b)).status).toBe(200);
    expect((await bookmarks(one)).body.map((n: { id: string }) => n.id)).toEqual([a]);
    expect((await bookmarks(two)).body.map((n: { id: string }) => n.id)).toEqual([b]);
  });

  it("leaves out a bookmarked followers-only note once the caller stops following", async () => {
    const author = await fresh("private");
    const reader = await fresh("fan");
    await follow(reader, author);
    const hidden = await postNote(author, "for followers", "followers");
    const open = await postNote(author, "for all");
    expect((await bookmark(reader, hidden)).status).toBe(200);
    expect((await bookmark(reader, open)).status).toBe(200);
    expect((await bookmarks(reader)).body.map((n: { id: string }) => n.id)).toEqual([open, hidden]);
    expectEmpty(await server.request("DELETE", `/accounts/${author.name}/follow`, { token: reader.token }));
    expect((await bookmarks(reader)).body.map((n: { id: string }) => n.id)).toEqual([open]);
  });

  it("leaves out a bookmarked note whose author is frozen", async () => {
    const author = await fresh("frosty");
    const reader = await fresh("watcher");
    const noteId = await postNote(author, "soon frozen");
    expect((await bookmark(reader, noteId)).status).toBe(200);
    await act.moderate(server, moderator, author.name, "freeze");
    expect(await bookmarks(reader)).toMatchObject({ status: 200, body: [] });
  });

  it("deleting a note removes its reactions and bookmarks, and it leaves every bookmark list", async () => {
    const author = await fresh("deleter");
    const reader = await fresh("keeper");
    const noteId = await postNote(author, "here today");
    const kept = await postNote(author, "here tomorrow");
    expect((await react(bob, noteId, "👍")).status).toBe(200);
    expect((await react(carol, noteId, "🎉")).status).toBe(200);
    expect((await bookmark(reader, noteId)).status).toBe(200);
    expect((await bookmark(bob, noteId)).status).toBe(200);
    expect((await bookmark(reader, kept)).status).toBe(200);
    const where = { where: { noteId: BigInt(noteId) } };
    expect(await server.services.db.reaction.count(where)).toBe(2);
    expect(await server.services.db.bookmark.count(where)).toBe(2);

    expectEmpty(await server.request("DELETE", `/notes/${noteId}`, { token: author.token }));
    expect(await server.services.db.reaction.count(where)).toBe(0);
    expect(await server.services.db.bookmark.count(where)).toBe(0);
    expect((await bookmarks(reader)).body.map((n: { id: string }) => n.id)).toEqual([kept]);
    expect((await bookmarks(bob)).body.map((n: { id: string }) => n.id)).not.toContain(noteId);
    expectError(await react(dave, noteId, "👍"), 404, "NOTE_NOT_FOUND");
    expectError(await unreact(bob, noteId), 404, "NOTE_NOT_FOUND");
    expectError(await bookmark(reader, noteId), 404, "NOTE_NOT_FOUND");
    expectError(await unbookmark(reader, noteId), 404, "NOTE_NOT_FOUND");
  });
});

describe("Credentials", () => {
  it("answers 401 UNAUTHORIZED without credentials on each operation, changing nothing", async () => {
    const noteId = await postNote(alice, "anonymous hands off");
    expectUnauthorized(await react(undefined, noteId, "👍"), "UNAUTHORIZED");
    expectUnauthorized(await unreact(undefined, noteId), "UNAUTHORIZED");
    expectUnauthorized(await bookmark(undefined, noteId), "UNAUTHORIZED");
    expectUnauthorized(await unbookmark(undefined, noteId), "UNAUTHORIZED");
    expectUnauthorized(await bookmarks(undefined), "UNAUTHORIZED");
    const where = { where: { noteId: BigInt(noteId) } };
    expect(await server.services.db.reaction.count(where)).toBe(0);
    expect(await server.services.db.bookmark.count(where)).toBe(0);
  });

  it("answers 401 INVALID_TOKEN to a forged token", async () => {
    const noteId = await postNote(alice, "forged hands off");
    const forged = { token: "not.a.jwt" } as TestAccount;
    expectUnauthorized(await react(forged, noteId, "👍"), "INVALID_TOKEN");
    expectUnauthorized(await bookmark(forged, noteId), "INVALID_TOKEN");
  });
});
