// queryRows (src/db/client.ts) sends the timelines' and search's statements through
// node-postgres directly: its rows must be what Prisma's $queryRaw gives for the same statement,
// type for type (bigint, int, text, boolean, timestamptz, json, bigint[], null), or every page
// built from them would change.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Prisma, queryBytes, queryRows } from "../src/db/client.ts";
import * as act from "./support/actions.ts";
import { account } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  const alice = await account(server, "rr_alice");
  await act.post(server, alice, { content: "raw rows", cw_comment: "cw" });
});
afterAll(() => server?.close());

it("gives the rows and types Prisma's $queryRaw gives", async () => {
  const { db } = server.services;
  const statement = (since: Date) => Prisma.sql`
    SELECT n.id, n.author_id AS "authorId", n.content, n.visibility::text AS visibility, n.send_to_id AS "sendToId",
      n.created_at AS "createdAt", a.locked, a.followers_count AS "followersCount",
      json_build_object('id', a.id::text, 'name', a.name, 'createdAt', a.created_at) AS author,
      ARRAY[n.id, n.author_id] AS ids, '{}'::bigint[] AS "noIds", '{-5,0,9223372036854775807}'::bigint[] AS extremes,
      NULL::json AS nothing, '{}'::json AS empty
    FROM notes n JOIN accounts a ON a.id = n.author_id
    WHERE n.created_at > ${since} AND n.id = ANY(${[0n, 1n]}::bigint[]) IS NOT TRUE
    ORDER BY n.id DESC`;
  const since = new Date(0);
  const direct = await queryRows<Record<string, unknown>>(db, statement(since));
  const viaPrisma = await db.$queryRaw<Record<string, unknown>[]>(statement(since));
  expect(direct.length).toBeGreaterThan(0);
  expect(direct).toEqual(viaPrisma);
  expect(typeof direct[0].id).toBe("bigint");
  expect(direct[0].createdAt).toBeInstanceOf(Date);
  expect(direct[0].ids).toEqual([direct[0].id, direct[0].authorId]);
  expect([direct[0].noIds, direct[0].extremes]).toEqual([[], [-5n, 0n, 9223372036854775807n]]);
  // Twice: the second time the statement is prepared on its connection.
  expect(await queryRows(db, statement(since))).toEqual(direct);
});

it("runs through Prisma in a transaction, on the transaction's connection", async () => {
  const { db } = server.services;
  const inside = await db.$transaction(async (tx) => {
    await tx.$executeRaw`SET LOCAL application_name = 'raw_rows_test'`;
    return queryRows<{ name: string }>(tx, Prisma.sql`SELECT current_setting('application_name') AS name`);
  });
  expect(inside).toEqual([{ name: "raw_rows_test" }]);
});

it("queryBytes gives a text column as its UTF-8, through the pool and through Prisma alike", async () => {
  const { db } = server.services;
  const text = 'a note: "🎉 café" \\ end';
  const statement = Prisma.sql`SELECT ${text}::text AS node, NULL::text AS nothing`;
  const direct = await queryBytes<{ node: Buffer; nothing: Buffer | null }>(db, statement);
  const viaPrisma = await db.$transaction((tx) => queryBytes<{ node: Buffer; nothing: Buffer | null }>(tx, statement));
  expect(direct[0].node).toEqual(Buffer.from(text));
  expect(direct[0].nothing).toBeNull();
  expect(viaPrisma).toEqual(direct);
  // Twice: the second time the statement is prepared on its connection.
  expect(await queryBytes(db, statement)).toEqual(direct);
});
