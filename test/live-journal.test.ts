// The live journal's read (src/domain/live/journal.ts) costs one probe of its index however many
// events it keeps (six hours of them): every delivery to the live streams waits for it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db } from "../src/db/client.ts";
import { journalHorizon, journalRead, readJournal } from "../src/domain/live/journal.ts";
import { freshDatabase } from "./support/server.ts";

let url: string;
let db: Db;
let emptyRead: Awaited<ReturnType<typeof readJournal>>;

/**
 * The read after `after` once no transaction holds the horizon back. The cluster is shared with the
 * other test files running meanwhile: a transaction of theirs that began before an event here
 * committed holds it back as this file's own would (CI saw `waiting` true after the holder below
 * had committed). Within 10 s.
 */
async function settledRead(after: Awaited<ReturnType<typeof journalHorizon>>) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const read = await readJournal(db, after);
    if (!read.waiting || Date.now() > deadline) return read;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  url = await freshDatabase();
  db = createDb(url, () => {});
  emptyRead = await settledRead(await journalHorizon(db));
  // A journal of many events, all written before the read (a seeded million notes wrote one each).
  await db.$executeRaw`INSERT INTO live_events (kind, ref_id) SELECT 'n', g FROM generate_series(1, 20000) g`;
  await db.$executeRaw`ANALYZE live_events`;
});
afterAll(async () => {
  await db.$disconnect();
});

describe("reading the live journal", () => {
  it("reads through the position index, not a scan of every event kept", async () => {
    const after = await journalHorizon(db);
    const plan = await db.$queryRaw<{ "QUERY PLAN": string }[]>`EXPLAIN ${journalRead(after)}`;
    expect(plan.map((l) => l["QUERY PLAN"]).join("\n")).not.toMatch(/Seq Scan/);
  });

  it("says whether committed events wait behind a transaction still running", async () => {
    expect(emptyRead).toMatchObject({ events: [], waiting: false });
    const after = await journalHorizon(db);
    expect(await settledRead(after)).toMatchObject({ events: [], waiting: false });
    // An older transaction holds the horizon back while a newer one's event commits.
    const holder = createDb(url, () => {});
    try {
      await holder.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT pg_current_xact_id()`;
        await db.$executeRaw`INSERT INTO live_events (kind, ref_id) VALUES ('n', 0)`;
        const held = await readJournal(db, after);
        expect(held).toMatchObject({ events: [], waiting: true });
      });
    } finally {
      await holder.$disconnect();
    }
    const read = await settledRead(after);
    expect(read.waiting).toBe(false);
    expect(read.events.map((e) => e.refId)).toEqual([0n]);
  });
});
