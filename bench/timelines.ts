// Timelines on a seeded database: latency under concurrent load, and EXPLAIN (ANALYZE, BUFFERS)
// of the very SQL each page sends, to show it is served by index scans.
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { loadConfig } from "../src/config.ts";
import { SERVICE_EPOCH_MS } from "../src/db/snowflake.ts";
import type { Context } from "../src/domain/context.ts";
import { listNotes } from "../src/domain/lists/service.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { accountTimeline, timeline } from "../src/domain/timelines/service.ts";
import { PrismaClient } from "../src/generated/prisma/client.ts";
import { createLogger } from "../src/log.ts";
import { closeServices, createServices } from "../src/services.ts";
import type { BenchServer } from "./server.ts";

/** A word of the seeded vocabulary: six hex letters, each in about one note in a thousand. */
export const WORD = (n: string) => `substr(md5((${n})::text), 1, 6)`;

export interface Dataset {
  accounts: number;
  notes: number;
  followed: number;
  listId: bigint;
  authorId: bigint;
}

/** Fills the database with set-based SQL: accounts, notes over the last day, follows, a list. */
export async function seedTimelines(
  server: BenchServer,
  accounts: number,
  notes: number,
  followed: number,
): Promise<Dataset> {
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  const firstAccount = 10_000_000n;
  // Snowflakes a day old and older, 1 ms apart: every seeded note is older than anything new.
  const firstNote = BigInt(Date.now() - SERVICE_EPOCH_MS - 86_400_000 - notes) << 22n;
  await client.query(
    `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
     SELECT $1::bigint + g, 'seed' || g, 'seed' || g, 'seed' || g || '@example.com', 'seed' || g || '@example.com',
            'Seed ' || g, 'x', true
     FROM generate_series(1, $2::int) g`,
    [firstAccount, accounts],
  );
  await client.query(
    `INSERT INTO notes (id, author_id, content, visibility, created_at)
     SELECT $1::bigint + (g::bigint << 22), $2::bigint + 1 + (g % $3::int),
            'seeded note ' || g || ' ' || ${WORD("g % 1000")} || ' ' || ${WORD("g % 997")} || ' ' || ${WORD("g % 991")},
            (ARRAY['public','public','public','home','followers'])[1 + g % 5]::"Visibility", now()
     FROM generate_series(1, $4::int) g`,
    [firstNote, firstAccount, accounts, notes],
  );
  await client.query(
    `INSERT INTO follows (follower_id, followee_id) SELECT $1::bigint, $2::bigint + g FROM generate_series(1, $3::int) g`,
    [server.accountId, firstAccount, followed],
  );
  const listId = firstAccount * 10n;
  await client.query(`INSERT INTO lists (id, owner_id, title, public) VALUES ($1, $2, 'bench', false)`, [
    listId,
    server.accountId,
  ]);
  await client.query(
    `INSERT INTO list_members (list_id, account_id) SELECT $1::bigint, $2::bigint + g FROM generate_series(1, 30) g`,
    [listId, firstAccount],
  );
  await client.query("ANALYZE");
  await client.end();
  return { accounts, notes, followed, listId, authorId: firstAccount + 1n };
}

export interface Latency {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** `total` GET requests, `concurrency` at a time; latencies in ms. */
export async function measure(url: string, token: string, total = 400, concurrency = 8): Promise<Latency> {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        const t0 = performance.now();
        const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`${url} answered ${response.status}`);
        times.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q: number) => Number(times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1));
  return { requests: total, perSecond: Math.round(total / seconds), p50: at(0.5), p99: at(0.99) };
}

/** The plans of each timeline's notes query, run by the same services the server runs. */
export async function explainTimelines(
  server: BenchServer,
  dataset: Dataset,
  searches: Record<string, string> = {},
): Promise<Record<string, string>> {
  const config = loadConfig({ ...process.env, DATABASE_URL: server.databaseUrl, LOG_LEVEL: "silent" });
  const services = await createServices(config, server.databaseUrl, createLogger("silent"));
  const captured: { query: string; params: string }[] = [];
  // The services' own code, on a client that reports the SQL it sends.
  const logged = new PrismaClient({
    adapter: new PrismaPg({ connectionString: server.databaseUrl }),
    log: [{ emit: "event", level: "query" }],
  });
  logged.$on("query", (e) => captured.push({ query: e.query, params: e.params }));
  const viewer = await logged.account.findUniqueOrThrow({ where: { id: server.accountId } });
  const ctx = { ...services, db: logged, caller: { account: viewer } } as unknown as Context;
  const pages: Record<string, () => Promise<unknown>> = {
    home: () => timeline(ctx, "home", {}),
    global: () => timeline(ctx, "global", {}),
    account: () => accountTimeline(ctx, dataset.authorId.toString(), {}),
    list: () => listNotes(ctx, dataset.listId.toString(), {}),
    ...Object.fromEntries(
      Object.entries(searches).map(([name, query]) => [`search ${name}`, () => searchNotes(ctx, query)]),
    ),
  };
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  const plans: Record<string, string> = {};
  for (const [name, page] of Object.entries(pages)) {
    captured.length = 0;
    await page();
    const notesQuery = captured.find((q) => /FROM "public"\."notes"/.test(q.query) && /ORDER BY/.test(q.query));
    if (!notesQuery) continue;
    const params = JSON.parse(notesQuery.params) as unknown[];
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${notesQuery.query}`, params);
    plans[name] = rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
  }
  await client.end();
  await logged.$disconnect();
  await closeServices(services);
  return plans;
}
