// Notes load the same whichever way a page is read: Prisma's include (notePage: the global
// timeline) and the one raw statement of the other timelines (notesSelectedBy) give equal note
// objects, field for field: author, reactions in order, files in order, every id and date.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import { notePage, notesSelectedBy } from "../src/domain/timelines/page.ts";
import { account, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  const alice = await account(server, "nl_alice");
  const bob = await account(server, "nl_bob");
  const png = await image("png", 8, 8);
  const avatar = await uploadFile(server, alice, png, "avatar.png");
  await server.request("PATCH", "/accounts/nl_alice", {
    token: alice.token,
    body: { avatar_file_id: avatar.id, bio: "hi" },
  });
  const files = [
    await uploadFile(server, alice, png, "one.png", { nsfw: "true" }),
    await uploadFile(server, alice, png, "two.png"),
  ];
  const post = (who: typeof alice, body: unknown) => server.request("POST", "/notes", { token: who.token, body });
  const first = await post(alice, { content: "two files", attachment_file_ids: [files[1].id, files[0].id] });
  await post(bob, { content: "careful", cw_comment: "spoiler" });
  for (const [who, emoji] of [
    [bob, "🎉"],
    [alice, "👍"],
  ] as const) {
    await server.request("POST", `/notes/${first.body.id}/reaction`, { token: who.token, body: { emoji } });
  }
  await server.request("POST", `/notes/${first.body.id}/renote`, { token: bob.token, body: {} });
  await server.request("POST", `/notes/${first.body.id}/reply`, { token: bob.token, body: { content: "nice" } });
});
afterAll(() => server.close());

describe("a page of notes", () => {
  it("is the same from Prisma's include and from the raw statement", async () => {
    const ctx = { ...server.services, caller: {} };
    const included = await notePage(ctx, undefined, { visibility: "public" }, {});
    const raw = await notesSelectedBy(
      ctx,
      Prisma.sql`SELECT n.* FROM notes n WHERE n.visibility = 'public' ORDER BY n.id DESC LIMIT 20`,
    );
    expect(included).toHaveLength(4);
    expect(included.some((n) => n.attachments.length === 2 && n.reactions.length === 2)).toBe(true);
    expect(included.some((n) => n.author.avatarFileId !== null)).toBe(true);
    expect(raw).toEqual(included);
  });
});
