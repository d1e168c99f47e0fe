// The federation queue's claim (src/federation/message-queue.ts) is planned for its values at every
// message, never a named statement: named, PostgreSQL kept a generic plan of it after a few runs,
// which with 10,000 deliveries held for a dead server kept 1.8 of 2 cores busy (bench/README.md,
// "Intake, 2026-11-27 (third)").
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresMessageQueue } from "../src/federation/message-queue.ts";
import { freshDatabase } from "./support/server.ts";

const WAIT = { timeout: 10_000, interval: 25 };
const log = pino({ level: "silent" });

let databaseUrl: string;
let admin: pg.Client;
let q: PostgresMessageQueue | undefined;

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
});

afterAll(async () => {
  await q?.close();
  await admin?.end();
});

/** The claims' Parse messages sent so far (pg sends one for every unnamed statement it runs). */
let claimParses = 0;
const { parse } = pg.Connection.prototype as unknown as { parse: (query: { text: string }) => void };
(pg.Connection.prototype as unknown as { parse: typeof parse }).parse = function (query) {
  if (query.text.includes("claimed AS (")) claimParses++;
  return parse.call(this, query);
};

describe("the federation queue's claim", () => {
  it("is parsed at every message, never kept as a named statement", async () => {
    q = new PostgresMessageQueue({ databaseUrl, log, name: "planned", concurrency: 2, poolSize: 2 });
    await q.enqueueMany(Array.from({ length: 40 }, (_, n) => ({ n })));
    const before = claimParses;
    const handled: number[] = [];
    const controller = new AbortController();
    const listening = q.listen(
      (message) => {
        handled.push((message as { n: number }).n);
      },
      { signal: controller.signal },
    );
    try {
      await expect
        .poll(
          async () =>
            (await admin.query("SELECT count(*)::int AS n FROM federation_messages WHERE queue = 'planned'")).rows[0].n,
          WAIT,
        )
        .toBe(0);
    } finally {
      controller.abort();
      await listening;
    }
    expect(handled.sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, n) => n));
    // Each of the 40 claims that found a message (and those that found none). Named, it was
    // parsed once for each of two texts (a claim alone, a claim carrying a done) on each of the
    // pool's two connections: at most 4.
    expect(claimParses - before).toBeGreaterThanOrEqual(40);
  });
});
