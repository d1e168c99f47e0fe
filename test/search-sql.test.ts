// Search's page is selected in SQL (compileSearchSql, with the timelines' visibility rule in SQL)
// for speed; its Prisma form (compileSearch with visibleTo and unmuted) is the reference it is held equal to:
// for random query trees over a vocabulary the fixtures use, both select the same notes, for an
// anonymous caller, an account (muting another) and a moderator.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { audienceSql, unfrozenSql, unmuted, unmutedSql, visibleTo } from "../src/domain/notes/visibility.ts";
import { compileSearch, compileSearchSql } from "../src/domain/search/postgres.ts";
import type { SearchNode } from "../src/domain/search/query.ts";
import type { CallerAccount } from "../src/domain/sessions/caller-cache.ts";
import { moderate, post } from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let ana: TestAccount;
let ben: TestAccount;
let mod: TestAccount;
const WORDS = ["osprey", "Heron", "ÉCLAIR", "50%", "a_b", "http://", "wren"];

beforeAll(async () => {
  server = await startTestServer();
  const names = { alice: "ana", follower: "ben", moderator: "mod", stranger: "cid" };
  const { alice, follower, moderator, stranger: cid } = await cast(server, names);
  [ana, ben, mod] = [alice, follower, moderator];
  const file = await uploadFile(server, ana, await image("png", 8, 8), "pic.png");
  const original = await post(server, ana, { content: "osprey over the heron" });
  await post(server, ana, { content: "éclair at 50% off, see https://x.example", visibility: "followers" });
  await post(server, ana, { content: "", cw_comment: "WREN a_b", attachment_file_ids: [file.id] });
  await post(server, ben, { content: "Heron and wren", visibility: "direct", send_to: "ana" });
  await post(server, ben, { content: "ab 50 percent http://plain.example", visibility: "home" });
  await post(server, cid, { content: "osprey by the frozen one" });
  for (const body of [{}, { content: "quoting the osprey" }]) {
    const renote = await server.request("POST", `/notes/${original.id}/renote`, { token: ben.token, body });
    expect(renote.status).toBe(200);
  }
  await moderate(server, mod, "cid", "freeze");
  const dee = await account(server, "dee");
  await post(server, dee, { content: "osprey, heron and wren, muted" });
  expect((await server.request("POST", "/accounts/dee/mute", { token: ana.token, body: {} })).status).toBe(204);
}, 60_000);

afterAll(() => server?.close());

const leaf: fc.Arbitrary<SearchNode> = fc.oneof(
  fc.constantFrom(...WORDS).map((text) => ({ kind: "keyword" as const, text })),
  fc.constantFrom("over the", "HERON AND", "at 50").map((text) => ({ kind: "phrase" as const, text })),
  fc.constantFrom("ana", "ben", "cid", "dee", "nobody").map((name) => ({ kind: "from" as const, name })),
  fc.constantFrom("renote" as const, "quote" as const).map((value) => ({ kind: "is" as const, value })),
  fc.constantFrom("link" as const, "media" as const).map((value) => ({ kind: "has" as const, value })),
);
const tree: fc.Arbitrary<SearchNode> = fc.letrec<{ node: SearchNode }>((self) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(self("node"), { minLength: 2, maxLength: 3 }).map((items) => ({ kind: "and" as const, items })),
    fc.array(self("node"), { minLength: 2, maxLength: 3 }).map((items) => ({ kind: "or" as const, items })),
    self("node").map((item) => ({ kind: "not" as const, item })),
  ),
})).node;

describe("the SQL page of a search", () => {
  it("selects what the Prisma filter selects, for every kind of caller", async () => {
    const { db } = server.services;
    const viewers: (CallerAccount | undefined)[] = [
      undefined,
      ...(await Promise.all([ana, mod].map((a) => server.services.callers.get(BigInt(a.id))))).map(
        (a) => a ?? undefined,
      ),
    ];
    const ids = await db.account.findMany({ select: { id: true, name: true } });
    const authors = new Map<string, bigint | undefined>(ids.map((a) => [a.name, a.id]));
    authors.set("nobody", undefined);
    const sizes = new Set<number>();
    await fc.assert(
      fc.asyncProperty(tree, fc.constantFrom(...viewers), async (node, viewer) => {
        const byPrisma = await db.note.findMany({
          where: { AND: [visibleTo(viewer), unmuted(viewer), compileSearch(node, authors)] },
          orderBy: { id: "desc" },
          select: { id: true },
        });
        const bySql = await db.$queryRaw<{ id: bigint }[]>`
          SELECT n.id FROM notes n
          WHERE ${compileSearchSql(node, authors)} AND ${audienceSql(viewer)} ${unfrozenSql(viewer)} ${unmutedSql(viewer)}
          ORDER BY n.id DESC`;
        expect(bySql.map((n) => n.id)).toEqual(byPrisma.map((n) => n.id));
        sizes.add(bySql.length);
      }),
      { numRuns: 300 },
    );
    // Not vacuous: the trees selected none, one and several of the notes.
    expect(Math.min(...sizes)).toBe(0);
    expect(sizes.size).toBeGreaterThan(3);
    // Not vacuous either: the muted account's note is there for all but the account muting it.
    const found = async (token?: string) =>
      (await server.request("GET", "/search/notes?query=muted", { token })).body.length;
    expect([await found(), await found(ana.token), await found(ben.token)]).toEqual([1, 0, 1]);
  }, 60_000);
});
