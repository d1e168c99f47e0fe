// The federation queue's claim (src/federation/message-queue.ts) is planned for its values at every
// statement, never a named statement: named, PostgreSQL kept a generic plan of it made while the
// table was empty, which with 10,000 deliveries held for a dead server kept 1.8 of 2 cores busy
// (bench/README.md, "Intake, 2026-11-27 (third)" and "(fifth)"); so it claims several messages at
// once, and the done of those with nothing parked behind them leaves out the let-go. And what it
// reads of the key-value store (a received activity's idempotence record) it reads by the store's
// key: the table holds a day of those records, and the claim had read it whole at every message
// ("Intake, 2026-11-27 (fourth)").
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

/** The last claim carrying a done, as sent: its text and values. */
let lastClaim: { text: string; values: unknown[] } | undefined;
/** Claim statements sent so far. */
let claimsSent = 0;
const { query } = pg.Pool.prototype as unknown as { query: (text: unknown, values?: unknown) => unknown };
(pg.Pool.prototype as unknown as { query: typeof query }).query = function (text, values) {
  if (typeof text === "string" && text.includes("claimed AS (")) claimsSent++;
  if (typeof text === "string" && text.includes("claimed AS (") && text.includes("handled AS (")) {
    lastClaim = { text, values: values as unknown[] };
  }
  return query.call(this, text, values);
};

/** Handles `messages` on queue `name` with `handler` until none is left. */
async function handleAll(name: string, messages: unknown[], handler: (message: unknown) => void): Promise<void> {
  q = new PostgresMessageQueue({ databaseUrl, log, name, concurrency: 2, poolSize: 2 });
  await q.enqueueMany(messages);
  const controller = new AbortController();
  const listening = q.listen(handler, { signal: controller.signal });
  try {
    await expect
      .poll(
        async () =>
          (await admin.query("SELECT count(*)::int AS n FROM federation_messages WHERE queue = $1", [name])).rows[0].n,
        WAIT,
      )
      .toBe(0);
  } finally {
    controller.abort();
    await listening;
    await q.close();
    q = undefined;
  }
}

describe("the federation queue's claim", () => {
  it("is parsed at every statement, never kept as a named statement, and claims several messages at once", async () => {
    q = new PostgresMessageQueue({ databaseUrl, log, name: "planned", concurrency: 2, poolSize: 2 });
    await q.enqueueMany(Array.from({ length: 40 }, (_, n) => ({ n })));
    const parsedBefore = claimParses;
    const sentBefore = claimsSent;
    const handled: number[] = [];
    const controller = new AbortController();
    const listening = q.listen(
      async (message) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
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
    // Named, it was parsed once for each of its texts on each of the pool's two connections.
    const sent = claimsSent - sentBefore;
    expect(claimParses - parsedBefore).toBe(sent);
    // Up to two more than are running are claimed when none claimed is left waiting: one claim a
    // message (and one for the dones at the end) before.
    expect(sent).toBeLessThanOrEqual(25);
  });

  it("leaves out the let-go from the done of messages with nothing parked behind them", async () => {
    lastClaim = undefined;
    await handleAll(
      "unkeyed",
      Array.from({ length: 10 }, (_, n) => ({ n })),
      () => {},
    );
    const claim = lastClaim as { text: string; values: unknown[] } | undefined;
    if (!claim) throw new Error("no claim carrying a done was sent");
    expect(claim.text).not.toContain("next AS (");
  });

  it("reads the store's entries its message names by their key, not the whole table", async () => {
    // A day of idempotence records (src/federation/kv-store.ts keys them so).
    await admin.query(
      `INSERT INTO federation_kv (key, value, expires_at)
       SELECT '["_fedify","activityIdempotence","https://murmur.test","https://a.example/activities/' || n || '"]',
              'true', now() + interval '1 day'
       FROM generate_series(1, 20000) AS n`,
    );
    await admin.query("ANALYZE federation_kv");
    const named = (n: number) =>
      `["_fedify","activityIdempotence","https://murmur.test","https://a.example/activities/${n}"]`;
    lastClaim = undefined;
    await handleAll(
      "carried",
      Array.from({ length: 10 }, (_, n) => ({ n, carriedReads: [named(n + 1)] })),
      () => {},
    );
    // Narrowed to undefined by the assignment above; the handler's claims set it meanwhile.
    const claim = lastClaim as { text: string; values: unknown[] } | undefined;
    if (!claim) throw new Error("no claim carrying a done was sent");
    const { rows } = await admin.query(`EXPLAIN (FORMAT JSON) ${claim.text}`, claim.values);
    const scans: string[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (node["Relation Name"] === "federation_kv") scans.push(String(node["Node Type"]));
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk(rows[0]["QUERY PLAN"][0].Plan);
    // The done's write of the records (an insert) and the claim's read, by the primary key.
    expect(scans.length).toBeGreaterThan(0);
    expect(scans).not.toContain("Seq Scan");
  });
});
