// The federation queue's claim (src/federation/message-queue.ts) is a named statement: parsed and
// planned once a connection, not at every message. Planning it had cost PostgreSQL more than
// running it (bench/README.md, "Intake, 2026-11-27 (third)").
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
  it("is parsed once a connection, not once a message", async () => {
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
    // Two texts (a claim alone, a claim carrying a done) on each of the pool's two connections.
    // Unnamed, each of the 40 claims and more was parsed.
    expect(claimParses - before).toBeGreaterThan(0);
    expect(claimParses - before).toBeLessThanOrEqual(4);
  });
});
