// An author's notes posted side by side commit together (src/db/keyed-writes.ts): one row lock
// wait and one flush for all of them, where each had waited for the one before it to be flushed.
// Each note still gets its own answer, and a statement that fails among others fails alone.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import { KeyedWrites } from "../src/db/keyed-writes.ts";
import * as act from "./support/actions.ts";
import { account } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

it("commits one author's concurrent notes in fewer transactions, and counts each", async () => {
  const alice = await account(server, "kw_alice");
  await Promise.all(Array.from({ length: 24 }, (_, i) => act.post(server, alice, { content: `together ${i}` })));
  const [{ transactions, notes }] = await server.services.db.$queryRaw<{ transactions: bigint; notes: bigint }[]>`
    SELECT count(DISTINCT n.xmin::text) AS transactions, count(*) AS notes
    FROM notes n JOIN accounts a ON a.id = n.author_id WHERE a.name = 'kw_alice'`;
  expect(notes).toBe(24n);
  expect(transactions).toBeLessThan(24n);
  expect((await server.request("GET", "/accounts/kw_alice")).body).toMatchObject({ note_count: 24 });
});

it("answers a statement that fails among others with its own error, and the others with their rows", async () => {
  const writes = new KeyedWrites(server.services.db);
  const ok = (n: number) => Prisma.sql`SELECT ${n}::int AS n`;
  const failing = Prisma.sql`SELECT 1 / ${0}::int AS n`;
  const results = await Promise.allSettled([
    writes.run<{ n: number }>("k", ok(1)),
    writes.run<{ n: number }>("k", ok(2)),
    writes.run<{ n: number }>("k", failing),
    writes.run<{ n: number }>("k", ok(3)),
  ]);
  expect(results.map((r) => (r.status === "fulfilled" ? r.value[0].n : (r.reason as Error).message))).toEqual([
    1,
    2,
    "division by zero",
    3,
  ]);
});
