// A viral note's newest reactions are read by a walk of their index that stops at the page's
// count, whatever the planner's statistics say of the note (docs/notes.md#bounded-reactions):
// among many notes with three reactions each, PostgreSQL estimates any note at about three,
// and asked the newest of `note_id = <the outer note>` inline, it read a viral note's every
// reaction and sorted them.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import type { Context } from "../src/domain/context.ts";
import { listReactions, REACTIONS_PAGE } from "../src/domain/reactions/service.ts";
import { newestReactions, REACTIONS_SHOWN, reactionColumns } from "../src/domain/reactions/shown.ts";
import { jsonSql } from "../src/http/views/wire.ts";
import { viewerOf } from "../src/projection/field.ts";
import { noteStatements } from "../src/projection/note.ts";
import { FULL_NOTE } from "../src/rest/views/note.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const ACCOUNTS = 600;
const VIRAL = 9_100_000_000n;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  const { db } = server.services;
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
    SELECT 9000000000 + g, 'vr' || g, 'vr' || g, 'vr' || g || '@example.com', 'vr' || g || '@example.com', 'V', '!', true
    FROM generate_series(1, ${ACCOUNTS}::int) g`;
  // Notes with three reactions each (what most notes have), known to the planner; then
  // the viral note's, which it has not seen yet (a note gone viral since its last ANALYZE).
  await db.$executeRaw`
    INSERT INTO notes (id, author_id, content) SELECT ${VIRAL}::bigint + g, 9000000001, 'note ' || g FROM generate_series(0, ${ACCOUNTS}::int) g`;
  await db.$executeRaw`
    INSERT INTO reactions (id, note_id, account_id, emoji)
    SELECT 9300000000 + 3 * g + k, ${VIRAL}::bigint + g, 9000000000 + (g + k) % ${ACCOUNTS}::int + 1, '🎉'
    FROM generate_series(1, ${ACCOUNTS}::int) g, generate_series(0, 2) k`;
  await db.$executeRawUnsafe("ANALYZE reactions");
  await db.$executeRaw`
    INSERT INTO reactions (id, note_id, account_id, emoji)
    SELECT 9200000000 + g, ${VIRAL}::bigint, 9000000000 + g, '👍' FROM generate_series(1, ${ACCOUNTS}::int) g`;
});
afterAll(() => server?.close());

/**
 * The reactions the statement read, by whatever plan, a function's too: fetched through any of
 * the table's indexes or by a bitmap, or read by a scan of the table.
 */
async function reactionRowsRead(statement: Prisma.Sql): Promise<number> {
  return (await reactionsReadBy((tx) => tx.$queryRawUnsafe(statement.text, ...statement.values))).read;
}

async function reactionsReadBy<T>(
  work: (tx: Prisma.TransactionClient) => Promise<T>,
): Promise<{ read: number; result: T }> {
  return server.services.db.$transaction(async (tx) => {
    const fetched = async () =>
      Number(
        (
          await tx.$queryRaw<{ n: bigint }[]>`
            SELECT sum(pg_stat_get_xact_tuples_fetched(i.indexrelid)) + pg_stat_get_xact_tuples_fetched('reactions'::regclass)
              + pg_stat_get_xact_tuples_returned('reactions'::regclass) AS n
            FROM pg_index i WHERE i.indrelid = 'reactions'::regclass`
        )[0].n,
      );
    const before = await fetched();
    const result = await work(tx);
    return { read: (await fetched()) - before, result };
  });
}

const ofViral = (newest: Prisma.Sql) =>
  Prisma.sql`SELECT (SELECT count(*) FROM (${newest}) r) FROM notes n WHERE n.id = ${VIRAL}::bigint`;

it("reads the newest reactions of a note estimated at three, not every one of them", async () => {
  // The trap: the same page by equality reads all the viral note's reactions here.
  const byEquality = Prisma.sql`SELECT * FROM reactions WHERE note_id = n.id ORDER BY id DESC LIMIT ${REACTIONS_SHOWN}`;
  expect(await reactionRowsRead(ofViral(byEquality))).toBe(ACCOUNTS);
  expect(await reactionRowsRead(ofViral(newestReactions(Prisma.sql`n.id`, REACTIONS_SHOWN)))).toBe(REACTIONS_SHOWN);
});

it("writes a viral note for a reader reading at most a page of its reactions", async () => {
  const { db } = server.services;
  const page = Prisma.sql`SELECT n.* FROM notes n WHERE n.id = ${VIRAL}::bigint`;
  const reader = await db.account.findUniqueOrThrow({ where: { id: 9000000001n } });
  const ctx = { ...server.services, caller: { account: reader } } as Context;
  // The FullNote JSON of REST's pages and get note, and the NoteViews' columns.
  const fullNote = noteStatements((t, viewer) => jsonSql(FULL_NOTE, t, viewer))(page, viewerOf(ctx));
  expect(await reactionRowsRead(fullNote)).toBeLessThanOrEqual(REACTIONS_SHOWN + 1);
  const views = Prisma.sql`SELECT ${reactionColumns(Prisma.sql`n.id`, reader.id)} FROM notes n WHERE n.id = ${VIRAL}::bigint`;
  expect(await reactionRowsRead(views)).toBeLessThanOrEqual(REACTIONS_SHOWN + 1);
});

it("pages through a viral note's reactions reading a page of them a page", async () => {
  const { db } = server.services;
  const reader = await db.account.findUniqueOrThrow({ where: { id: 9000000002n } });
  const list = (before?: string) =>
    reactionsReadBy((tx) =>
      listReactions(
        { ...server.services, db: tx, caller: { account: reader } } as unknown as Context,
        `${VIRAL}`,
        before,
      ),
    );
  const first = await list();
  expect(first.result.map((r) => r.accountId)).toEqual(
    Array.from({ length: REACTIONS_PAGE }, (_, i) => BigInt(9_000_000_000 + ACCOUNTS - i)),
  );
  expect(first.read).toBeLessThanOrEqual(REACTIONS_PAGE + 1);
  const second = await list(`${first.result.at(-1)?.id}`);
  expect(second.result[0].accountId).toBe(BigInt(9_000_000_000 + ACCOUNTS - REACTIONS_PAGE));
  expect(second.read).toBeLessThanOrEqual(REACTIONS_PAGE + 1);
});
