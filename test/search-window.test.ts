// A common word's search asks the notes past where its last page began first
// (src/domain/search/window.ts): the older notes are read only when those fall short, and the
// notes found are the newest the caller may see, as they were without it. A client that logs
// its statements shows which were asked.

import { PrismaPg } from "@prisma/adapter-pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, Prisma } from "../src/db/client.ts";
import type { Context } from "../src/domain/context.ts";
import { compileSearchSql } from "../src/domain/search/postgres.ts";
import { parseSearchQuery } from "../src/domain/search/query.ts";
import { SEARCH_PAGE, searchNotes } from "../src/domain/search/service.ts";
import { type Matches, matchesOf, windowOf } from "../src/domain/search/window.ts";
import { PrismaClient } from "../src/generated/prisma/client.ts";
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

let counting: Db | undefined;
let sent: string[] = [];
const ids = async (word: string, beforeId?: string) =>
  (await searchNotes({ ...anonymous(), db: counting ?? db() }, word, beforeId)).map((n) => n.id.toString());

/** The statements searches sent while `run` ran (through a client that logs them). */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  sent = [];
  counting = countingDb;
  try {
    await run();
  } finally {
    counting = undefined;
  }
  return sent;
}
let countingDb: Db;

beforeAll(async () => {
  server = await startTestServer();
  ana = await account(server, "ana");
  const client = new PrismaClient({
    adapter: new PrismaPg({ connectionString: server.databaseUrl }),
    log: [{ emit: "event", level: "query" }],
  });
  client.$on("query", (event) => sent.push(event.query));
  countingDb = client as unknown as Db;
}, 60_000);
afterAll(async () => {
  await countingDb?.$disconnect();
  await server?.close();
});

describe("search window (src/domain/search/window.ts)", () => {
  it("is learned from a common word's page, then answers the same notes reading only the newest", async () => {
    await seed("owlet", 1200);
    expect(windowOf("owlet")).toBeUndefined();
    const first = await ids("owlet");
    const from = windowOf("owlet");
    expect(from).toBeDefined();
    expect(await ids("owlet")).toEqual(first);
    expect(first).toEqual(await expected("owlet"));

    // Asked from the window alone when it holds a page: one statement for the search, and the
    // window's matches learned once (the second above); then asked by their ids.
    const asked = await statementsOf(() => ids("owlet"));
    expect(asked.filter((sql) => sql.includes("ILIKE"))).toEqual([expect.stringMatching(/n\.id = ANY\(/)]);
    expect(asked.join()).not.toMatch(/n\.id >= \$\d+ ORDER/);
  });

  it("finds by the matches learned the notes written and edited since, and not those no longer matching", async () => {
    await seed("godwit", 1200);
    await ids("godwit");
    await ids("godwit");
    const learned = matchesOf("godwit", "");
    // The window's matches: its page and the quarter before it.
    expect(learned?.ids.length).toBeGreaterThan(SEARCH_PAGE);
    // A note written since; one older than the page's newest edited to match, one of the page
    // edited not to; one older than every match learned edited to match (below the floor: older
    // than the page, so not in it either way).
    await seed("godwit", 2);
    const [older] = await db().$queryRaw<{ id: bigint }[]>`
      SELECT id FROM notes WHERE content LIKE 'nothing %' AND id > ${learned?.ids[20]} ORDER BY id LIMIT 1`;
    await db().$executeRaw`UPDATE notes SET content = 'now a godwit' WHERE id = ${older.id}`;
    await db().$executeRaw`UPDATE notes SET content = 'no longer' WHERE id = ${learned?.ids[5]}`;
    await db().$executeRaw`
      UPDATE notes SET content = 'an old godwit' WHERE id = (SELECT min(id) FROM notes WHERE content LIKE 'nothing %')`;
    const asked = await statementsOf(async () => expect(await ids("godwit")).toEqual(await expected("godwit")));
    expect(asked.filter((sql) => sql.includes("ILIKE"))).toEqual([expect.stringMatching(/n\.id = ANY\(/)]);
    const found = await ids("godwit");
    expect(found).toContain(older.id.toString());
    expect(found).not.toContain(learned?.ids[5].toString());
  });

  it("asks the window again when the matches no longer hold a page", async () => {
    await seed("plover", 1200);
    await ids("plover");
    await ids("plover");
    const learned = matchesOf("plover", "") as Matches;
    expect(learned).toBeDefined();
    await db().$executeRaw`DELETE FROM notes WHERE id = ANY(${learned.ids.slice(0, 60)}::bigint[])`;
    const asked = await statementsOf(async () => expect(await ids("plover")).toEqual(await expected("plover")));
    // The window held no more of a page than its matches did: the older notes were asked too.
    expect(asked.filter((sql) => sql.includes("ILIKE"))).toEqual([
      expect.stringMatching(/n\.id = ANY\(/),
      expect.stringMatching(/n\.id >= \$\d+ ORDER/),
      expect.stringMatching(/n\.id < \$\d+ ORDER/),
    ]);
    expect(matchesOf("plover", "")).toBeUndefined();
  });

  it("falls back to the older notes when the window no longer holds a page, and learns again", async () => {
    await seed("pipit", 1200);
    await ids("pipit");
    const from = windowOf("pipit") as bigint;
    expect(from).toBeDefined();
    // Most of the window's notes leave what anyone may see.
    await db().$executeRaw`
      UPDATE notes SET visibility = 'followers' WHERE content ILIKE '%pipit%' AND id >= ${from} AND id % 10 <> 0`;
    const asked = await statementsOf(async () => expect(await ids("pipit")).toEqual(await expected("pipit")));
    expect(asked.filter((sql) => sql.includes("ILIKE"))).toEqual([
      expect.stringMatching(/n\.id >= \$\d+/),
      expect.stringMatching(/n\.id < \$\d+/),
    ]);
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

  it("asks the matches' patterns in a form the trigram indexes cannot serve", async () => {
    // The pattern's value, known as the statement runs, had PostgreSQL scan them and AND their
    // bitmap with the ids' (half of a remembered search's statement at 200,000 notes). Here
    // their only other way is a scan of the table, which it is told to avoid.
    const plan = await db().$transaction(async (tx) => {
      await tx.$executeRawUnsafe("SET LOCAL enable_seqscan = off");
      const rows = await tx.$queryRaw<{ "QUERY PLAN": string }[]>`
        EXPLAIN SELECT n.id FROM notes n WHERE ${compileSearchSql(parseSearchQuery("owlet OR godwit"), new Map(), false)}`;
      return rows.map((row) => row["QUERY PLAN"]).join("\n");
    });
    expect(plan).not.toMatch(/trgm/);
  });
});
