// A common word's search asks the notes past where its last page began first
// (src/domain/search/window.ts): the older notes are read only when those fall short, and the
// notes found are the newest the caller may see, as they were without it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import type { Context } from "../src/domain/context.ts";
import { audienceSql } from "../src/domain/notes/visibility.ts";
import { SEARCH_PAGE, searchNotes, windowSql } from "../src/domain/search/service.ts";
import { windowOf } from "../src/domain/search/window.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let ana: TestAccount;
const anonymous = (): Context => ({ ...server.services, search: undefined, caller: {} });
const db = () => server.services.db;

/** `count` notes by ana, oldest first, every other one holding `word`. */
async function seed(word: string, count: number): Promise<void> {
  await db().$executeRaw`
    INSERT INTO notes (id, author_id, content, visibility)
    SELECT (SELECT coalesce(max(id), 0) FROM notes) + g, ${BigInt(ana.id)},
      CASE WHEN g % 2 = 0 THEN 'a ' || ${word} || ' ' || g ELSE 'nothing ' || g END, 'public'
    FROM generate_series(1, ${count}::int) g`;
}

/** The newest page of `word`'s notes anyone may see, asked plainly. */
async function expected(word: string, beforeId?: bigint): Promise<string[]> {
  const rows = await db().$queryRaw<{ id: bigint }[]>`
    SELECT id FROM notes WHERE content ILIKE ${`%${word}%`} AND visibility IN ('public', 'home')
      ${beforeId === undefined ? Prisma.empty : Prisma.sql`AND id < ${beforeId}`}
    ORDER BY id DESC LIMIT ${SEARCH_PAGE}`;
  return rows.map((r) => r.id.toString());
}

const ids = async (word: string, beforeId?: string) =>
  (await searchNotes(anonymous(), word, beforeId)).map((n) => n.id.toString());

beforeAll(async () => {
  server = await startTestServer();
  ana = await account(server, "ana");
}, 60_000);
afterAll(() => server?.close());

describe("search window (src/domain/search/window.ts)", () => {
  it("is learned from a common word's page, then answers the same notes reading only the newest", async () => {
    await seed("owlet", 1200);
    expect(windowOf("owlet")).toBeUndefined();
    const first = await ids("owlet");
    const from = windowOf("owlet");
    expect(from).toBeDefined();
    expect(await ids("owlet")).toEqual(first);
    expect(first).toEqual(await expected("owlet"));

    // The notes older than the window are not read when the window holds a page.
    const plan = await db().$queryRaw<{ "QUERY PLAN": string }[]>`
      EXPLAIN (ANALYZE, COSTS OFF) ${windowSql(
        Prisma.sql`(n.content ILIKE '%owlet%') AND ${audienceSql(undefined)}`,
        Prisma.raw(String(SEARCH_PAGE)),
        from as bigint,
      )}`;
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    expect(text).toMatch(/never executed/);
  });

  it("falls back to the older notes when the window no longer holds a page, and learns again", async () => {
    await seed("pipit", 1200);
    await ids("pipit");
    const from = windowOf("pipit") as bigint;
    expect(from).toBeDefined();
    // Most of the window's notes leave what anyone may see.
    await db().$executeRaw`
      UPDATE notes SET visibility = 'followers' WHERE content ILIKE '%pipit%' AND id >= ${from} AND id % 10 <> 0`;
    expect(await ids("pipit")).toEqual(await expected("pipit"));
    expect(windowOf("pipit")).toBeUndefined();
    await ids("pipit");
    expect(windowOf("pipit")).toBeDefined();
  });

  it("pages past the window as without it", async () => {
    await seed("tern", 1200);
    const first = await ids("tern");
    expect(windowOf("tern")).toBeDefined();
    let before = first[first.length - 1];
    for (let page = 0; page < 6; page++) {
      const got = await ids("tern", before);
      expect(got).toEqual(await expected("tern", BigInt(before)));
      if (got.length === 0) break;
      before = got[got.length - 1];
    }
  });

  it("is not learned for a word of few notes", async () => {
    await seed("dunlin", 500);
    expect(await ids("dunlin")).toEqual(await expected("dunlin"));
    expect(windowOf("dunlin")).toBeUndefined();
  });
});
