// What a Create or a Like asks of the key-value table (whether a Delete or an Undo came first,
// src/domain/overtaken.ts) is one probe of its key, however stale the table's statistics: the
// table takes a day of idempotence records, each expiring a day after it came, so the statistics
// of the last ANALYZE always say that hardly a row outlives now(). Planned on the expiry's index,
// the probe read every live record: 2,140 buffers and 1.8 ms a Create with 3,000 records
// (bench/README.md, "Intake after a fan-out, 2026-11-27").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db, Prisma } from "../src/db/client.ts";
import { overtakenSql, rememberOvertaken, wasOvertaken } from "../src/domain/overtaken.ts";
import { freshDatabase } from "./support/server.ts";

let db: Db;
beforeAll(async () => {
  db = createDb(await freshDatabase(), () => {});
  // Analyzed while what it held had expired (a server's first hour: keys cached, then swept)...
  await db.$executeRaw`
    INSERT INTO federation_kv (key, value, expires_at)
    SELECT 'old' || g, 'true'::jsonb, now() - interval '1 hour' FROM generate_series(1, 200) g`;
  await db.$executeRaw`ANALYZE federation_kv`;
  // ...then a day of idempotence records, none expired.
  await db.$executeRaw`
    INSERT INTO federation_kv (key, value, expires_at)
    SELECT 'record' || g, 'true'::jsonb, now() + interval '1 day' FROM generate_series(1, 5000) g`;
});
afterAll(async () => {
  await db.$disconnect();
});

describe("whether an activity was overtaken", () => {
  it("is asked by the table's key, not by its expiry's index", async () => {
    const plan = await db.$queryRaw<{ "QUERY PLAN": string }[]>`
      EXPLAIN SELECT ${overtakenSql("deleted-note", new URL("https://remote.example/notes/1"))} AS overtaken`;
    const text = plan.map((line) => line["QUERY PLAN"]).join("\n");
    expect(text).toMatch(/federation_kv_pkey/);
    expect(text).not.toMatch(/expires_at_idx|Seq Scan/);
  });

  it("answers what was remembered, and not once it expired", async () => {
    const uri = new URL("https://remote.example/notes/2");
    expect(await wasOvertaken(db, "deleted-note", uri)).toBe(false);
    await rememberOvertaken(db, "deleted-note", uri);
    expect(await wasOvertaken(db, "deleted-note", uri)).toBe(true);
    expect(await wasOvertaken(db, "undone-reaction", uri)).toBe(false);
    await db.$executeRaw(
      Prisma.sql`UPDATE federation_kv SET expires_at = now() - interval '1 second' WHERE key LIKE '%notes/2"]'`,
    );
    expect(await wasOvertaken(db, "deleted-note", uri)).toBe(false);
  });
});
