// The REST pages of many notes are written as JSON by PostgreSQL (src/rest/views/note-sql.ts):
// every note it writes must be the one fullNoteView gives, member for member, for every kind of
// caller: optional members absent, a file's blur only for images, URLs, the qualified author
// name, the newest 20 reactions with the caller's own in place of the oldest, the counts.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import type { Context } from "../src/domain/context.ts";
import { notesSelectedBy } from "../src/domain/timelines/page.ts";
import { viewerOf } from "../src/projection/field.ts";
import { fullNoteView } from "../src/rest/views/note.ts";
import { fullNotesArray, fullNotesJson, fullNotesJsonForCallers } from "../src/rest/views/note-sql.ts";
import * as act from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { viralNote } from "./support/scenes.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let author: TestAccount;
let reactors: TestAccount[];

beforeAll(async () => {
  server = await startTestServer();
  author = await account(server, "ns_author");
  const other = await account(server, "ns_other");
  reactors = (await viralNote(server, author, other, "ns_")).reactors;
  // A note with a few reactions (the newest read inline), beside the viral one's 24 (through
  // newest_reactions).
  const few = await act.post(server, author, { content: "a few reactions" });
  for (const who of reactors.slice(0, 3))
    await server.request("POST", `/notes/${few.id}/reaction`, { token: who.token, body: { emoji: "👍" } });
  await act.post(server, author, { content: "direct", visibility: "direct", send_to: other.id });
  await act.post(server, other, { content: "followers only", visibility: "followers" });
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
    const written = JSON.parse(fullNotesArray(await fullNotesJson(ctx, page)).toString());
    expect(written.length).toBeGreaterThanOrEqual(6);
    expect(written, who?.name ?? "nobody").toEqual(expected);
  }
  // The cases are there: both kinds of file, every optional member, the caller's old reaction.
  const ctx = {
    ...server.services,
    caller: { account: await db.account.findUniqueOrThrow({ where: { id: BigInt(reactors[0].id) } }) },
  } as Context;
  const notes = JSON.parse(fullNotesArray(await fullNotesJson(ctx, page)).toString());
  const viral = notes.find((n: { reaction_count: number }) => n.reaction_count === 24);
  expect(viral.reactions).toHaveLength(20);
  expect(viral.reactions.at(-1).reacted_by).toBe(reactors[0].id);
  expect(viral.attachment_files.map((f: { blur?: string }) => typeof f.blur)).toEqual(["undefined", "string"]);
  expect(notes.some((n: { send_to?: string }) => n.send_to)).toBe(true);
  expect(notes.some((n: { renote_id?: string }) => n.renote_id)).toBe(true);
  expect(notes.some((n: { reply_to?: string }) => n.reply_to)).toBe(true);
});

it("writes a page for many callers in one statement as it does for each alone", async () => {
  const { db } = server.services;
  const callers = [reactors[0], author, reactors[23], reactors[0], reactors[5]];
  const contexts = await Promise.all(
    callers.map(
      async (who) =>
        ({
          ...server.services,
          caller: { account: await db.account.findUniqueOrThrow({ where: { id: BigInt(who.id) } }) },
        }) as Context,
    ),
  );
  const page = Prisma.sql`SELECT n.* FROM notes n ORDER BY n.id DESC LIMIT 50`;
  const together = await fullNotesJsonForCallers(
    db,
    page,
    viewerOf(contexts[0]),
    callers.map((who) => BigInt(who.id)),
  );
  expect(together).toHaveLength(callers.length);
  for (const [i, ctx] of contexts.entries()) {
    const alone = fullNotesArray(await fullNotesJson(ctx, page)).toString();
    expect(fullNotesArray(together[i]).toString(), callers[i].name).toBe(alone);
  }
  // Each caller's own reaction is in its page, not another's.
  const viralOf = (notes: FullNoteJsonLike[]) => notes.find((n) => n.reaction_count === 24);
  const seen = together.map((notes) => viralOf(JSON.parse(fullNotesArray(notes).toString())));
  expect(seen[0]?.reactions.at(-1)?.reacted_by).toBe(reactors[0].id);
  expect(seen[4]?.reactions.some((r) => r.reacted_by === reactors[5].id)).toBe(true);
});

interface FullNoteJsonLike {
  reaction_count: number;
  reactions: { reacted_by: string }[];
}
