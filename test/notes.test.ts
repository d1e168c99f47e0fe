// Notes over REST (docs/notes.md): create, get, renote, reply
// and delete; every documented code; visibility from each kind of viewer; frozen and silenced
// authors; attachments read live from the drive; mentions and renote notifications; note counts.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image, wav } from "./support/media.ts";
import { type Answer, HOST, PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";
import { expectShape, FullNoteShape, ISO_MS, NoteShape, SNOWFLAKE } from "./support/shapes.ts";

const UNKNOWN_ID = "999999999999999999";

let server: TestServer;
// alice writes; fol follows alice; bob receives direct notes and mentions; sam is a logged-in
// stranger; mod is a moderator. Other accounts below are used by one test each.
let alice: TestAccount;
let fol: TestAccount;
let bob: TestAccount;
let sam: TestAccount;
let mod: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  ({ alice, follower: fol, bob, stranger: sam, moderator: mod } = await cast(server));
});
afterAll(() => server.close());

type Who = Pick<TestAccount, "token"> | undefined;

const qualified = (name: string) => `@${name}@${HOST}`;

function postNote(who: Who, body: unknown, prefix = ""): Promise<Answer> {
  return server.request("POST", `${prefix}/notes`, { body, token: who?.token });
}

function getNote(id: string, who?: Who, prefix = ""): Promise<Answer> {
  return server.request("GET", `${prefix}/notes/${id}`, { token: who?.token });
}

function renote(who: Who, id: string, body: unknown = {}): Promise<Answer> {
  return server.request("POST", `/notes/${id}/renote`, { body, token: who?.token });
}

function reply(who: Who, id: string, body: unknown): Promise<Answer> {
  return server.request("POST", `/notes/${id}/reply`, { body, token: who?.token });
}

function deleteNote(who: Who, id: string): Promise<Answer> {
  return server.request("DELETE", `/notes/${id}`, { token: who?.token });
}

/** Creates a note that must succeed; its JSON. */
const note = (who: TestAccount, body: Record<string, unknown>) => act.post(server, who, body);
const moderate = (name: string, action: act.ModerationAction) => act.moderate(server, mod, name, action);
const follow = (follower: TestAccount, name: string) => act.follow(server, follower, name);

// biome-ignore lint/suspicious/noExplicitAny: notifications are read field by field
async function notificationsOf(who: TestAccount): Promise<any[]> {
  const answer = await server.request("GET", "/notifications?limit=50", { token: who.token });
  expect(answer.status).toBe(200);
  return answer.body.notifications;
}

async function noteCount(name: string): Promise<number> {
  const answer = await server.request("GET", `/accounts/${name}`);
  expect(answer.status).toBe(200);
  return answer.body.note_count;
}

function expectEmpty(answer: Answer, status = 204) {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: "" });
}

describe("POST /notes", () => {
  it("answers 201 with exactly id, content, cw_comment, visibility, created_at, attachment_files; defaults public and ''", async () => {
    const before = Date.now();
    const answer = await postNote(alice, { content: "hello world" });
    expect(answer.status).toBe(201);
    expectShape(NoteShape, answer.body);
    expect(answer.body).toEqual({
      id: expect.stringMatching(SNOWFLAKE),
      content: "hello world",
      cw_comment: "",
      visibility: "public",
      created_at: expect.stringMatching(ISO_MS),
      attachment_files: [],
    });
    const createdAt = Date.parse(answer.body.created_at);
    expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it("keeps the given cw_comment and visibility", async () => {
    for (const visibility of ["public", "home", "followers"]) {
      const answer = await postNote(alice, { content: `as ${visibility}`, cw_comment: "spoiler", visibility });
      expect(answer.status).toBe(201);
      expectShape(NoteShape, answer.body);
      expect(answer.body).toMatchObject({ content: `as ${visibility}`, cw_comment: "spoiler", visibility });
    }
  });

  it("answers a direct note with send_to as well", async () => {
    const answer = await postNote(alice, { content: "psst", visibility: "direct", send_to: bob.id });
    expect(answer.status).toBe(201);
    expectShape(NoteShape, answer.body, ["send_to"]);
    expect(answer.body).toMatchObject({ content: "psst", visibility: "direct", send_to: bob.id });
  });

  it("rejects an unknown visibility: 400 INVALID_VISIBILITY", async () => {
    expectError(await postNote(alice, { content: "x", visibility: "friends" }), 400, "INVALID_VISIBILITY");
    expectError(await postNote(alice, { content: "x", visibility: "" }), 400, "INVALID_VISIBILITY");
    expectError(await postNote(alice, { content: "x", visibility: "PUBLIC" }), 400, "INVALID_VISIBILITY");
  });

  it("counts content in code points: 3000 emoji pass, 3001 characters give 400 TOO_MANY_CONTENT", async () => {
    const emoji = "😀".repeat(3000);
    const ok = await postNote(alice, { content: emoji });
    expect(ok.status).toBe(201);
    expect(ok.body.content).toBe(emoji);
    expect((await postNote(alice, { content: "a".repeat(3000) })).status).toBe(201);
    expectError(await postNote(alice, { content: "a".repeat(3001) }), 400, "TOO_MANY_CONTENT");
    expectError(await postNote(alice, { content: "😀".repeat(3001) }), 400, "TOO_MANY_CONTENT");
  });

  it("takes a cw_comment of 256 code points and rejects 257: 400 TOO_MANY_CONTENT", async () => {
    const ok = await postNote(alice, { content: "cw", cw_comment: "😀".repeat(256) });
    expect(ok.status).toBe(201);
    expect(ok.body.cw_comment).toBe("😀".repeat(256));
    expectError(await postNote(alice, { content: "cw", cw_comment: "c".repeat(257) }), 400, "TOO_MANY_CONTENT");
    expectError(await postNote(alice, { content: "cw", cw_comment: "😀".repeat(257) }), 400, "TOO_MANY_CONTENT");
  });

  it("rejects direct without send_to (400 NO_DESTINATION) and send_to without direct (400 INVALID_REQUEST)", async () => {
    expectError(await postNote(alice, { content: "to nobody", visibility: "direct" }), 400, "NO_DESTINATION");
    for (const visibility of ["public", "home", "followers"]) {
      expectError(await postNote(alice, { content: "x", visibility, send_to: bob.id }), 400, "INVALID_REQUEST");
    }
    expectError(await postNote(alice, { content: "x", send_to: bob.id }), 400, "INVALID_REQUEST");
  });

  it("rejects a direct note to an unknown account: 404 ACCOUNT_NOT_FOUND", async () => {
    expectError(
      await postNote(alice, { content: "x", visibility: "direct", send_to: UNKNOWN_ID }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
  });

  it("rejects empty content without attachments: 400 INVALID_REQUEST", async () => {
    expectError(await postNote(alice, { content: "" }), 400, "INVALID_REQUEST");
    expectError(await postNote(alice, {}), 400, "INVALID_REQUEST");
  });

  it.each([
    ["content a number", { content: 5 }],
    ["content null", { content: null }],
    ["visibility a number", { content: "x", visibility: 1 }],
    ["cw_comment a boolean", { content: "x", cw_comment: true }],
    ["attachment_file_ids a string", { content: "x", attachment_file_ids: "1" }],
    ["attachment_file_ids of numbers", { content: "x", attachment_file_ids: [1] }],
    ["send_to a number", { content: "x", visibility: "direct", send_to: 5 }],
    ["an array body", ["x"]],
  ])("rejects %s: 400 INVALID_REQUEST", async (_, body) => {
    expectError(await postNote(alice, body), 400, "INVALID_REQUEST");
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    expectUnauthorized(await postNote(undefined, { content: "anonymous" }), "UNAUTHORIZED");
  });

  it("is served under /v0 too, for create and get", async () => {
    const created = await postNote(alice, { content: "versioned" }, "/v0");
    expect(created.status).toBe(201);
    expectShape(NoteShape, created.body);
    const got = await getNote(created.body.id, undefined, "/v0");
    expect(got.status).toBe(200);
    expectShape(FullNoteShape, got.body);
    expect(got.body.content).toBe("versioned");
  });
});

describe("silenced accounts", () => {
  let sil: TestAccount;
  beforeAll(async () => {
    sil = await account(server, "sil");
    await moderate("sil", "silence");
  });

  it("refuse public: 403 YOU_ARE_SILENCED, explicit or by default", async () => {
    expectError(await postNote(sil, { content: "loud", visibility: "public" }), 403, "YOU_ARE_SILENCED");
    expectError(await postNote(sil, { content: "loud by default" }), 403, "YOU_ARE_SILENCED");
  });

  it("still post home, followers and direct notes", async () => {
    for (const body of [
      { content: "quiet", visibility: "home" },
      { content: "quieter", visibility: "followers" },
      { content: "whisper", visibility: "direct", send_to: bob.id },
    ]) {
      const answer = await postNote(sil, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      expect(answer.body.visibility).toBe(body.visibility);
    }
  });
});

describe("GET /notes/{id}", () => {
  it("answers 200 with the note, reactions [] and exactly the author summary", async () => {
    const created = await note(alice, { content: "read me", cw_comment: "careful" });
    const answer = await getNote(created.id);
    expect(answer.status).toBe(200);
    expectShape(FullNoteShape, answer.body);
    const profile = (await server.request("GET", "/accounts/alice")).body;
    expect(answer.body).toEqual({
      id: created.id,
      content: "read me",
      cw_comment: "careful",
      visibility: "public",
      created_at: created.created_at,
      attachment_files: [],
      reactions: [],
      reaction_count: 0,
      reaction_counts: {},
      author: {
        id: alice.id,
        name: qualified("alice"),
        display_name: profile.nickname,
        bio: profile.bio,
        avatar: "",
        header: "",
        followed_count: 1,
        following_count: 0,
      },
    });
    expect(typeof answer.body.author.display_name).toBe("string");
    expect(typeof answer.body.author.bio).toBe("string");
  });

  it("answers 404 NOTE_NOT_FOUND for an unknown id and a non-numeric one", async () => {
    expectError(await getNote(UNKNOWN_ID), 404, "NOTE_NOT_FOUND");
    expectError(await getNote("not-a-note", alice), 404, "NOTE_NOT_FOUND");
  });
});

describe("visibility", () => {
  const viewers = ["author", "follower", "recipient", "stranger", "anonymous"] as const;
  const tokenOf = (viewer: (typeof viewers)[number]): Who =>
    ({ author: alice, follower: fol, recipient: bob, stranger: sam, anonymous: undefined })[viewer];

  it.each([
    ["public", [200, 200, 200, 200, 200]],
    ["home", [200, 200, 200, 200, 200]],
    ["followers", [200, 200, 404, 404, 404]],
    ["direct", [200, 404, 200, 404, 404]],
  ])("a %s note is seen by exactly the allowed viewers", async (visibility, statuses) => {
    const created = await note(alice, {
      content: `visible as ${visibility}`,
      visibility,
      ...(visibility === "direct" ? { send_to: bob.id } : {}),
    });
    const seen: Record<string, number> = {};
    for (const viewer of viewers) {
      const answer = await getNote(created.id, tokenOf(viewer));
      seen[viewer] = answer.status;
      if (answer.status === 200) {
        expect(answer.body.id).toBe(created.id);
        expect(answer.body.visibility).toBe(visibility);
        if (visibility === "direct") expect(answer.body.send_to).toBe(bob.id);
      } else {
        expectError(answer, 404, "NOTE_NOT_FOUND");
      }
    }
    expect(seen).toEqual(Object.fromEntries(viewers.map((viewer, i) => [viewer, statuses[i]])));
  });

  it("hides a frozen author's notes from everyone but moderators, until unfrozen", async () => {
    const fred = await account(server, "fred");
    await follow(fol, "fred");
    const created = await note(fred, { content: "soon gone" });
    await moderate("fred", "freeze");

    for (const who of [fred, fol, sam, undefined]) expectError(await getNote(created.id, who), 404, "NOTE_NOT_FOUND");
    const seenByModerator = await getNote(created.id, mod);
    expect(seenByModerator.status).toBe(200);
    expect(seenByModerator.body.id).toBe(created.id);

    await moderate("fred", "unfreeze");
    for (const who of [fol, sam, undefined]) {
      const answer = await getNote(created.id, who);
      expect(answer.status).toBe(200);
      expect(answer.body.content).toBe("soon gone");
    }
  });
});

describe("attachments", () => {
  let gus: TestAccount;
  let png: Awaited<ReturnType<typeof uploadFile>>;
  let sound: Awaited<ReturnType<typeof uploadFile>>;
  beforeAll(async () => {
    gus = await account(server, "gus");
    png = await uploadFile(server, gus, await image("png", 32, 24), "picture.png");
    sound = await uploadFile(server, gus, wav(), "sound.wav");
  });

  it("lists exactly {id, filename, content_type, url, blur (images only), nsfw}, in order", async () => {
    const created = await postNote(gus, { content: "two files", attachment_file_ids: [png.id, sound.id] });
    expect(created.status).toBe(201);
    const expected = [
      {
        id: png.id,
        filename: "picture.png",
        content_type: "image/png",
        url: `${PUBLIC_URL}/files/${png.id}`,
        blur: png.hash,
        nsfw: false,
      },
      {
        id: sound.id,
        filename: "sound.wav",
        content_type: sound.mime,
        url: `${PUBLIC_URL}/files/${sound.id}`,
        nsfw: false,
      },
    ];
    expect(png.hash).not.toBe("");
    expect(created.body.attachment_files).toEqual(expected);
    expect(Object.keys(created.body.attachment_files[1])).not.toContain("blur");
    const got = await getNote(created.body.id);
    expect(got.status).toBe(200);
    expect(got.body.attachment_files).toEqual(expected);
  });

  it("takes empty content with an attachment: 201", async () => {
    const answer = await postNote(gus, { content: "", attachment_file_ids: [png.id] });
    expect(answer.status).toBe(201);
    expect(answer.body.content).toBe("");
    expect(answer.body.attachment_files.map((f: { id: string }) => f.id)).toEqual([png.id]);
  });

  it("takes 16 attachments and rejects 17: 400 TOO_MANY_ATTACHMENTS", async () => {
    const bytes = await image("png", 4, 4);
    const files = [];
    for (let i = 0; i < 17; i++) files.push(await uploadFile(server, gus, bytes, `many${i}.png`));
    const ids = files.map((f) => f.id);
    const sixteen = await postNote(gus, { content: "sixteen", attachment_file_ids: ids.slice(0, 16) });
    expect(sixteen.status).toBe(201);
    expect(sixteen.body.attachment_files.map((f: { id: string }) => f.id)).toEqual(ids.slice(0, 16));
    expectError(await postNote(gus, { content: "seventeen", attachment_file_ids: ids }), 400, "TOO_MANY_ATTACHMENTS");
  });

  it("rejects an unknown, another account's or a non-numeric file id: 404 ATTACHMENT_NOT_FOUND", async () => {
    expectError(await postNote(gus, { content: "x", attachment_file_ids: [UNKNOWN_ID] }), 404, "ATTACHMENT_NOT_FOUND");
    expectError(await postNote(alice, { content: "x", attachment_file_ids: [png.id] }), 404, "ATTACHMENT_NOT_FOUND");
    expectError(await postNote(gus, { content: "x", attachment_file_ids: ["abc"] }), 404, "ATTACHMENT_NOT_FOUND");
    // Any missing file fails the whole request.
    expectError(
      await postNote(gus, { content: "x", attachment_file_ids: [png.id, UNKNOWN_ID] }),
      404,
      "ATTACHMENT_NOT_FOUND",
    );
  });

  it("reads the nsfw flag and deletion live from the drive", async () => {
    const file = await uploadFile(server, gus, await image("png", 16, 16), "live.png");
    const created = await note(gus, { content: "live", attachment_file_ids: [file.id, sound.id] });

    const flagged = await server.request("PUT", `/drive/${file.id}`, { body: { nsfw: true }, token: gus.token });
    expect(flagged.status).toBe(200);
    const afterFlag = await getNote(created.id);
    expect(afterFlag.status).toBe(200);
    expect(afterFlag.body.attachment_files.map((f: { id: string; nsfw: boolean }) => [f.id, f.nsfw])).toEqual([
      [file.id, true],
      [sound.id, false],
    ]);

    expectEmpty(await server.request("DELETE", `/drive/${file.id}`, { token: gus.token }));
    const afterDelete = await getNote(created.id);
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.body.attachment_files.map((f: { id: string }) => f.id)).toEqual([sound.id]);
  });
});

describe("POST /notes/{id}/renote", () => {
  it("makes a plain renote of empty content: 200 with renote_id and content ''", async () => {
    const original = await note(alice, { content: "worth sharing" });
    const answer = await renote(bob, original.id, {});
    expect(answer.status).toBe(200);
    expectShape(NoteShape, answer.body, ["renote_id"]);
    expect(answer.body).toEqual({
      id: expect.stringMatching(SNOWFLAKE),
      content: "",
      cw_comment: "",
      visibility: "public",
      created_at: expect.stringMatching(ISO_MS),
      attachment_files: [],
      renote_id: original.id,
    });
    const got = await getNote(answer.body.id);
    expect(got.status).toBe(200);
    expect(got.body.renote_id).toBe(original.id);
  });

  it("makes a quote of non-empty content", async () => {
    const original = await note(alice, { content: "quotable", visibility: "home" });
    const answer = await renote(bob, original.id, { content: "so true" });
    expect(answer.status).toBe(200);
    expectShape(NoteShape, answer.body, ["renote_id"]);
    expect(answer.body).toMatchObject({ content: "so true", renote_id: original.id });
  });

  it("counts lengths in code points: 400 TOO_MANY_CHAR_LENGTH past 3000 or 256", async () => {
    const original = await note(alice, { content: "long replies ahead" });
    expectError(await renote(bob, original.id, { content: "a".repeat(3001) }), 400, "TOO_MANY_CHAR_LENGTH");
    expectError(await renote(bob, original.id, { content: "😀".repeat(3001) }), 400, "TOO_MANY_CHAR_LENGTH");
    expectError(
      await renote(bob, original.id, { content: "q", cw_comment: "c".repeat(257) }),
      400,
      "TOO_MANY_CHAR_LENGTH",
    );
    const atLimit = await renote(bob, original.id, { content: "😀".repeat(3000), cw_comment: "😀".repeat(256) });
    expect(atLimit.status).toBe(200);
  });

  it("refuses followers-only and direct notes: 403 NO_PERMISSION if seen, 404 NOTE_NOT_FOUND if not", async () => {
    const followersOnly = await note(alice, { content: "for followers", visibility: "followers" });
    expectError(await renote(fol, followersOnly.id), 403, "NO_PERMISSION");
    expectError(await renote(alice, followersOnly.id), 403, "NO_PERMISSION");
    expectError(await renote(sam, followersOnly.id), 404, "NOTE_NOT_FOUND");
    const direct = await note(alice, { content: "for bob", visibility: "direct", send_to: bob.id });
    expectError(await renote(bob, direct.id), 403, "NO_PERMISSION");
    expectError(await renote(sam, direct.id), 404, "NOTE_NOT_FOUND");
  });

  it("answers 404 NOTE_NOT_FOUND for an unknown note and 401 without credentials", async () => {
    expectError(await renote(bob, UNKNOWN_ID), 404, "NOTE_NOT_FOUND");
    const original = await note(alice, { content: "anonymous renote?" });
    expectUnauthorized(await renote(undefined, original.id), "UNAUTHORIZED");
  });

  it("gives the original author a renoted notification with the note id and its content", async () => {
    const original = await note(alice, { content: "renote me" });
    const answer = await renote(sam, original.id);
    expect(answer.status).toBe(200);
    const found = (await notificationsOf(alice)).filter((n) => n.type === "renoted" && n.noteId === original.id);
    expect(found).toEqual([
      {
        id: expect.stringMatching(SNOWFLAKE),
        type: "renoted",
        actor: {
          type: "account",
          account: { id: sam.id, name: expect.any(String), nickname: expect.any(String), avatar: "" },
        },
        noteId: original.id,
        content: "renote me",
        createdAt: expect.stringMatching(ISO_MS),
      },
    ]);
  });

  it("leaves the renoted content empty when the original is under a content warning", async () => {
    const original = await note(alice, { content: "hidden text", cw_comment: "spoilers" });
    expect((await renote(sam, original.id, { content: "look" })).status).toBe(200);
    const found = (await notificationsOf(alice)).filter((n) => n.type === "renoted" && n.noteId === original.id);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ noteId: original.id, content: "" });
    expect(found[0].actor.account.id).toBe(sam.id);
  });

  it("sends no notification for renoting one's own note", async () => {
    const own = await note(alice, { content: "my own" });
    expect((await renote(alice, own.id)).status).toBe(200);
    const found = (await notificationsOf(alice)).filter((n) => n.noteId === own.id);
    expect(found).toEqual([]);
  });
});

describe("POST /notes/{id}/reply", () => {
  it("answers 200 with the reply and reply_to", async () => {
    const original = await note(alice, { content: "ask me" });
    const answer = await reply(bob, original.id, { content: "an answer" });
    expect(answer.status).toBe(200);
    expectShape(NoteShape, answer.body, ["reply_to"]);
    expect(answer.body).toEqual({
      id: expect.stringMatching(SNOWFLAKE),
      content: "an answer",
      cw_comment: "",
      visibility: "public",
      created_at: expect.stringMatching(ISO_MS),
      attachment_files: [],
      reply_to: original.id,
    });
    const got = await getNote(answer.body.id);
    expect(got.status).toBe(200);
    expect(got.body.reply_to).toBe(original.id);
  });

  it("rejects lengths past the limits (400 TOO_MANY_CHAR_LENGTH) and empty content (400 INVALID_REQUEST)", async () => {
    const original = await note(alice, { content: "limits" });
    expectError(await reply(bob, original.id, { content: "a".repeat(3001) }), 400, "TOO_MANY_CHAR_LENGTH");
    expectError(
      await reply(bob, original.id, { content: "r", cw_comment: "c".repeat(257) }),
      400,
      "TOO_MANY_CHAR_LENGTH",
    );
    expect((await reply(bob, original.id, { content: "😀".repeat(3000) })).status).toBe(200);
    expectError(await reply(bob, original.id, { content: "" }), 400, "INVALID_REQUEST");
    expectError(await reply(bob, original.id, {}), 400, "INVALID_REQUEST");
  });

  it("answers 404 NOTE_NOT_FOUND for a note the caller cannot see, or none", async () => {
    const followersOnly = await note(alice, { content: "followers talk", visibility: "followers" });
    expectError(await reply(sam, followersOnly.id, { content: "let me in" }), 404, "NOTE_NOT_FOUND");
    expect((await reply(fol, followersOnly.id, { content: "I see it" })).status).toBe(200);
    expectError(await reply(sam, UNKNOWN_ID, { content: "hello?" }), 404, "NOTE_NOT_FOUND");
  });

  it("refuses a caller the note's author blocked: 403 YOU_ARE_BLOCKED", async () => {
    const erin = await account(server, "erin");
    const original = await note(erin, { content: "not for sam" });
    expectEmpty(await server.request("POST", "/accounts/sam/block", { body: {}, token: erin.token }));
    expectError(await reply(sam, original.id, { content: "hey" }), 403, "YOU_ARE_BLOCKED");
  });
});

describe("mentions", () => {
  async function mentionsOf(who: TestAccount, noteId: string) {
    return (await notificationsOf(who)).filter((n) => n.type === "mentioned" && n.noteId === noteId);
  }

  it.each([
    ["@bob", "hi @bob, look"],
    ["@bob@murmur.test", "hi @bob@murmur.test look"],
  ])("%s gives bob a mentioned notification with the note id", async (_, content) => {
    const created = await note(alice, { content });
    expect(await mentionsOf(bob, created.id)).toEqual([
      {
        id: expect.stringMatching(SNOWFLAKE),
        type: "mentioned",
        actor: {
          type: "account",
          account: { id: alice.id, name: expect.any(String), nickname: expect.any(String), avatar: "" },
        },
        noteId: created.id,
        createdAt: expect.stringMatching(ISO_MS),
      },
    ]);
  });

  it("tells no one of a note they cannot see", async () => {
    const created = await note(alice, { content: "secret for followers, not @bob", visibility: "followers" });
    expect(await mentionsOf(bob, created.id)).toEqual([]);
    const direct = await note(alice, { content: "@bob only sam gets this", visibility: "direct", send_to: sam.id });
    expect(await mentionsOf(bob, direct.id)).toEqual([]);
  });

  it("tells a follower of a followers-only note", async () => {
    const created = await note(alice, { content: "hey @fol", visibility: "followers" });
    expect(await mentionsOf(fol, created.id)).toHaveLength(1);
  });

  it("tells each of several named accounts once, beside a renote's notice, each notification its own id", async () => {
    const original = await note(sam, { content: "quote me" });
    const answer = await renote(alice, original.id, {
      content: "@bob and @fol and @bob again, @sam, me @alice, @nobody_here",
    });
    expect(answer.status).toBe(200);
    const quote = answer.body.id;
    const [toBob, toFol, toSam] = await Promise.all([bob, fol, sam].map((who) => mentionsOf(who, quote)));
    expect([toBob.length, toFol.length, toSam.length]).toEqual([1, 1, 1]);
    expect(await mentionsOf(alice, quote)).toEqual([]);
    const renoted = (await notificationsOf(sam)).filter((n) => n.type === "renoted" && n.noteId === original.id);
    expect(renoted).toHaveLength(1);
    expect(new Set([toBob[0].id, toFol[0].id, toSam[0].id, renoted[0].id]).size).toBe(4);
  });

  it("sends nothing for mentioning oneself", async () => {
    const created = await note(alice, { content: "note to self @alice" });
    expect(await mentionsOf(alice, created.id)).toEqual([]);
  });

  it("ignores an unknown name: 201", async () => {
    const answer = await postNote(alice, { content: "hello @nobody_here and @ghost@murmur.test" });
    expect(answer.status).toBe(201);
    expect(answer.body.content).toBe("hello @nobody_here and @ghost@murmur.test");
  });
});

describe("DELETE /notes/{id}", () => {
  it("lets the author delete: 204, then 404 NOTE_NOT_FOUND", async () => {
    const created = await note(alice, { content: "short-lived" });
    expectEmpty(await deleteNote(alice, created.id));
    expectError(await getNote(created.id, alice), 404, "NOTE_NOT_FOUND");
    expectError(await deleteNote(alice, created.id), 404, "NOTE_NOT_FOUND");
  });

  it("refuses another normal account: 403 NO_PERMISSION, and the note stays", async () => {
    const created = await note(alice, { content: "mine" });
    expectError(await deleteNote(sam, created.id), 403, "NO_PERMISSION");
    expect((await getNote(created.id)).status).toBe(200);
  });

  it("answers 404 NOTE_NOT_FOUND for an unknown note and 401 without credentials", async () => {
    expectError(await deleteNote(alice, UNKNOWN_ID), 404, "NOTE_NOT_FOUND");
    const created = await note(alice, { content: "still here" });
    expectUnauthorized(await deleteNote(undefined, created.id), "UNAUTHORIZED");
    expect((await getNote(created.id)).status).toBe(200);
  });

  it("lets a moderator delete any note, also a direct note between two others", async () => {
    const open = await note(alice, { content: "moderated" });
    expectEmpty(await deleteNote(mod, open.id));
    expectError(await getNote(open.id), 404, "NOTE_NOT_FOUND");

    const direct = await note(alice, { content: "between us", visibility: "direct", send_to: bob.id });
    expectEmpty(await deleteNote(mod, direct.id));
    expectError(await getNote(direct.id, alice), 404, "NOTE_NOT_FOUND");
    expectError(await getNote(direct.id, bob), 404, "NOTE_NOT_FOUND");
  });

  it("deletes plain renotes with the note; quotes and replies stay", async () => {
    const original = await note(alice, { content: "going away" });
    const plain = await renote(bob, original.id);
    const quote = await renote(sam, original.id, { content: "quoting it" });
    const answer = await reply(fol, original.id, { content: "replying to it" });
    for (const made of [plain, quote, answer]) expect(made.status).toBe(200);

    expectEmpty(await deleteNote(alice, original.id));
    expectError(await getNote(plain.body.id), 404, "NOTE_NOT_FOUND");
    const quoteAfter = await getNote(quote.body.id);
    expect(quoteAfter.status).toBe(200);
    expect(quoteAfter.body.content).toBe("quoting it");
    const replyAfter = await getNote(answer.body.id);
    expect(replyAfter.status).toBe(200);
    expect(replyAfter.body.content).toBe("replying to it");
  });

  it("keeps note_count in step with creates and deletes, also of deleted plain renotes' authors", async () => {
    const nora = await account(server, "nora");
    const rita = await account(server, "rita");
    expect([await noteCount("nora"), await noteCount("rita")]).toEqual([0, 0]);

    const first = await note(nora, { content: "first" });
    await note(nora, { content: "second" });
    expect(await noteCount("nora")).toBe(2);

    expect((await renote(rita, first.id)).status).toBe(200);
    expect((await renote(rita, first.id, { content: "a quote" })).status).toBe(200);
    expect((await reply(rita, first.id, { content: "a reply" })).status).toBe(200);
    expect(await noteCount("rita")).toBe(3);

    expectEmpty(await deleteNote(nora, first.id));
    expect([await noteCount("nora"), await noteCount("rita")]).toEqual([1, 2]);

    const last = await note(rita, { content: "mine to delete" });
    expect(await noteCount("rita")).toBe(3);
    expectEmpty(await deleteNote(mod, last.id));
    expect(await noteCount("rita")).toBe(2);
  });
});
