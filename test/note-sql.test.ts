// The REST pages of many notes are written as JSON by PostgreSQL (src/rest/views/note-sql.ts):
// every note it writes must be the one fullNoteView gives, member for member, for every kind of
// caller: optional members absent, a file's blur only for images, URLs, the qualified author
// name, the newest 20 reactions with the caller's own in place of the oldest, the counts.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import type { Context } from "../src/domain/context.ts";
import { notesSelectedBy } from "../src/domain/timelines/page.ts";
import { fullNoteView } from "../src/rest/views/note.ts";
import { fullNotesArray, fullNotesJson } from "../src/rest/views/note-sql.ts";
import * as act from "./support/actions.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image, wav } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let author: TestAccount;
const reactors: TestAccount[] = [];
const EMOJI = ["👍", "🎉", "❤️", "🇯🇵", "👩‍👩‍👧"];

beforeAll(async () => {
  server = await startTestServer();
  author = await account(server, "ns_author");
  const other = await account(server, "ns_other");
  const png = await image("png", 8, 8);
  const avatar = await uploadFile(server, author, png, "avatar.png");
  await server.request("PATCH", "/accounts/ns_author", {
    token: author.token,
    body: { avatar_file_id: avatar.id, bio: 'bio "quoted" \\ and\nnewline' },
  });
  const files = [
    await uploadFile(server, author, png, "one.png", { nsfw: "true" }),
    await uploadFile(server, author, wav(), "sound.wav"),
  ];
  const viral = await act.post(server, author, {
    content: 'files, "quotes", \\ and émoji 🎉\u0001',
    cw_comment: "cw",
    attachment_file_ids: [files[1].id, files[0].id],
  });
  await act.post(server, author, { content: "direct", visibility: "direct", send_to: other.id });
  await act.post(server, other, { content: "followers only", visibility: "followers" });
  await server.request("POST", `/notes/${viral.id}/renote`, { token: other.token, body: {} });
  await server.request("POST", `/notes/${viral.id}/renote`, { token: other.token, body: { content: "quote" } });
  await server.request("POST", `/notes/${viral.id}/reply`, { token: other.token, body: { content: "reply" } });
  // 24 reactions: the first reactor's is older than the newest 20.
  for (let i = 0; i < 24; i++) {
    const who = await account(server, `ns_r${i}`);
    reactors.push(who);
    const reacted = await server.request("POST", `/notes/${viral.id}/reaction`, {
      token: who.token,
      body: { emoji: EMOJI[i % EMOJI.length] },
    });
    expect(reacted.status).toBe(200);
  }
});
afterAll(() => server?.close());

it("writes each note as fullNoteView does, for every kind of caller", async () => {
  const { db } = server.services;
  const callers = [undefined, author, reactors[0], reactors[23]];
  const page = Prisma.sql`SELECT n.* FROM notes n ORDER BY n.id DESC LIMIT 50`;
  for (const who of callers) {
    const account = who && (await db.account.findUniqueOrThrow({ where: { id: BigInt(who.id) } }));
    const ctx = { ...server.services, caller: { account } } as Context;
    const expected = (await notesSelectedBy(ctx, page)).map((n) => JSON.parse(JSON.stringify(fullNoteView(ctx, n))));
    const written = JSON.parse(fullNotesArray(await fullNotesJson(ctx, page)));
    expect(written.length).toBeGreaterThanOrEqual(6);
    expect(written, who?.name ?? "nobody").toEqual(expected);
  }
  // The cases are there: both kinds of file, every optional member, the caller's old reaction.
  const ctx = {
    ...server.services,
    caller: { account: await db.account.findUniqueOrThrow({ where: { id: BigInt(reactors[0].id) } }) },
  } as Context;
  const notes = JSON.parse(fullNotesArray(await fullNotesJson(ctx, page)));
  const viral = notes.find((n: { reaction_count: number }) => n.reaction_count === 24);
  expect(viral.reactions).toHaveLength(20);
  expect(viral.reactions.at(-1).reacted_by).toBe(reactors[0].id);
  expect(viral.attachment_files.map((f: { blur?: string }) => typeof f.blur)).toEqual(["undefined", "string"]);
  expect(notes.some((n: { send_to?: string }) => n.send_to)).toBe(true);
  expect(notes.some((n: { renote_id?: string }) => n.renote_id)).toBe(true);
  expect(notes.some((n: { reply_to?: string }) => n.reply_to)).toBe(true);
});
