// Notes load whole from their one statement (notesSelectedBy): the same note objects as Prisma
// reads the rows, field for field: author, reactions in order, files in order, every id and date.
// And the visibility rule says the same as a Prisma filter (visibleTo) and in SQL (audienceSql,
// unfrozenSql), for every kind of viewer, and so does the feeds' mute rule (unmuted, unmutedSql).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import { PUBLIC_ACCOUNT_SELECT } from "../src/domain/accounts/service.ts";
import { notesSelectedBy } from "../src/domain/notes/load.ts";
import { audienceSql, unfrozenSql, unmuted, unmutedSql, visibleTo } from "../src/domain/notes/visibility.ts";
import type { CallerAccount } from "../src/domain/sessions/caller-cache.ts";
import * as act from "./support/actions.ts";
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
  const first = await act.post(server, alice, {
    content: "two files",
    attachment_file_ids: [files[1].id, files[0].id],
  });
  await act.post(server, bob, { content: "careful", cw_comment: "spoiler" });
  for (const [who, emoji] of [
    [bob, "🎉"],
    [alice, "👍"],
  ] as const) {
    await server.request("POST", `/notes/${first.id}/reaction`, { token: who.token, body: { emoji } });
  }
  await server.request("POST", `/notes/${first.id}/renote`, { token: bob.token, body: {} });
  await server.request("POST", `/notes/${first.id}/reply`, { token: bob.token, body: { content: "nice" } });
});
afterAll(() => server.close());

describe("a page of notes", () => {
  it("loads each note whole, as Prisma reads its rows", async () => {
    const { db } = server.services;
    const ctx = { ...server.services, caller: {} };
    const raw = await notesSelectedBy(
      ctx,
      Prisma.sql`SELECT n.* FROM notes n WHERE n.visibility = 'public' ORDER BY n.id DESC LIMIT 20`,
    );
    const rows = await db.note.findMany({
      where: { visibility: "public" },
      orderBy: { id: "desc" },
      take: 20,
      include: {
        author: { select: PUBLIC_ACCOUNT_SELECT },
        attachments: { orderBy: { position: "asc" }, include: { file: true } },
        reactions: { orderBy: { id: "desc" }, take: 20 },
      },
    });
    const expected = await Promise.all(
      rows.map(async (n) => {
        const counts = await db.reaction.groupBy({ by: ["emoji"], where: { noteId: n.id }, _count: true });
        return { ...n, ownReaction: null, reactionCounts: Object.fromEntries(counts.map((c) => [c.emoji, c._count])) };
      }),
    );
    expect(expected).toHaveLength(4);
    expect(expected.some((n) => n.attachments.length === 2 && n.reactions.length === 2)).toBe(true);
    expect(expected.some((n) => n.author.avatarFileId !== null)).toBe(true);
    expect(raw).toEqual(expected);
  });
});

describe("the visibility rule", () => {
  it("picks the same notes as a Prisma filter and in SQL, for every kind of viewer", async () => {
    const names = ["vr_author", "vr_follower", "vr_stranger", "vr_addressee", "vr_frozen", "vr_mod"];
    const [author, follower, stranger, addressee, frozen] = await Promise.all(
      names.slice(0, 5).map((name) => account(server, name)),
    );
    const mod = await account(server, "vr_mod", "moderator");
    await server.request("POST", "/accounts/vr_author/follow", { token: follower.token, body: {} });
    await server.request("POST", "/accounts/vr_frozen/follow", { token: follower.token, body: {} });
    for (const who of [author, frozen]) {
      for (const visibility of ["public", "home", "followers", "direct"]) {
        await server.request("POST", "/notes", {
          token: who.token,
          body: {
            content: `${who.name} ${visibility}`,
            visibility,
            ...(visibility === "direct" ? { send_to: addressee.id } : {}),
          },
        });
      }
    }
    // Mutes: the follower's of the author, the moderator's of the frozen account.
    for (const [who, muted] of [
      [follower, "vr_author"],
      [mod, "vr_frozen"],
    ] as const) {
      expect((await server.request("POST", `/accounts/${muted}/mute`, { token: who.token, body: {} })).status).toBe(
        204,
      );
    }
    await server.request("PUT", "/accounts/vr_frozen/freeze", { token: mod.token, body: {} });
    const db = server.services.db;
    const authors = [BigInt(author.id), BigInt(frozen.id)];
    const viewers: (CallerAccount | undefined)[] = [
      undefined,
      ...(await Promise.all(
        [author, follower, stranger, addressee, frozen, mod].map((who) =>
          db.account.findUniqueOrThrow({ where: { id: BigInt(who.id) } }),
        ),
      )),
    ];
    for (const viewer of viewers) {
      const byPrisma = await db.note.findMany({
        where: { AND: [visibleTo(viewer), { authorId: { in: authors } }] },
        select: { id: true },
        orderBy: { id: "asc" },
      });
      const bySql = await db.$queryRaw<{ id: bigint }[]>`
        SELECT n.id FROM notes n
        WHERE n.author_id = ANY(${authors}::bigint[]) AND ${audienceSql(viewer)} ${unfrozenSql(viewer)}
        ORDER BY n.id`;
      expect(
        bySql.map((n) => n.id),
        viewer?.name ?? "nobody",
      ).toEqual(byPrisma.map((n) => n.id));
      const inFeedByPrisma = await db.note.findMany({
        where: { AND: [visibleTo(viewer), unmuted(viewer), { authorId: { in: authors } }] },
        select: { id: true },
        orderBy: { id: "asc" },
      });
      const inFeedBySql = await db.$queryRaw<{ id: bigint }[]>`
        SELECT n.id FROM notes n
        WHERE n.author_id = ANY(${authors}::bigint[]) AND ${audienceSql(viewer)} ${unfrozenSql(viewer)}
          ${unmutedSql(viewer)}
        ORDER BY n.id`;
      expect(
        inFeedBySql.map((n) => n.id),
        `${viewer?.name ?? "nobody"}'s feeds`,
      ).toEqual(inFeedByPrisma.map((n) => n.id));
      // The mutes leave out what they should: the follower sees only the frozen account's
      // (nothing, frozen), the moderator only the author's.
      if (viewer?.name === "vr_follower") expect([bySql.length, inFeedBySql.length]).toEqual([3, 0]);
      if (viewer?.name === "vr_mod") expect([bySql.length, inFeedBySql.length]).toEqual([4, 2]);
    }
    // The cases differ: nobody sees the author's public and home notes; a moderator, the frozen
    // account's too.
    const counts = await Promise.all(
      [undefined, viewers[6]].map((viewer) =>
        db.note.count({ where: { AND: [visibleTo(viewer), { authorId: { in: authors } }] } }),
      ),
    );
    expect(counts).toEqual([2, 4]);
  });
});
