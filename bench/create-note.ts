// Note creation beside its bare baseline: POST /notes by one account on 32 connections
// and by 32 authors, in turns with a bare Fastify + pg server replaying exactly the statements
// one creation sends (bench/bare-write.ts), three runs each, medians kept. With `explain`, also
// EXPLAIN (ANALYZE, BUFFERS) of those statements (rolled back), whose trigger lines give each
// trigger's time; with `triggerCosts`, the bare handler's rate with each trigger on the path
// disabled in turn (on the bench's own database only: it alters the tables).
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import type { Context, Services } from "../src/domain/context.ts";
import { createNote } from "../src/domain/notes/service.ts";
import type { CapturedWrite } from "./bare-write.ts";
import { type Load, load, medianRun } from "./load.ts";
import { startBareServer } from "./server.ts";
import type { SqlProbe } from "./sql.ts";

export const CREATE_NOTE_BODY = { content: "benchmark note @seed3" };

export interface CreateNoteFigures {
  murmur: { oneAccount: Load; authors: Load };
  bare: { oneAccount: Load; authors: Load };
  statements: number;
  /** EXPLAIN (ANALYZE, BUFFERS) of each statement, with `explain`. */
  plans?: string[];
  /** The bare handler's notes/s by 32 authors with each trigger disabled, with `triggerCosts`. */
  withoutTrigger?: Record<string, { bare: number; withIt: number }>;
}

/** Triggers a note creation with a mention runs, as [table, trigger]. */
const TRIGGERS: [string, string][] = [
  ["notes", "notes_accounts_alive"],
  ["notes", "notes_live_created"],
  ["notifications", "notifications_accounts_alive"],
  ["notifications", "notifications_live_created"],
  ["accounts", "accounts_changed"],
];

export async function benchCreateNote(options: {
  services: Services;
  probe: SqlProbe;
  databaseUrl: string;
  dataDir: string;
  serverUrl: string;
  /** The viewer's token (the probe's account). */
  token: string;
  viewerId: bigint;
  /** 32 authors, one per connection, and their ids in the same order. */
  authorTokens: string[];
  authorIds: bigint[];
  explain?: boolean;
  triggerCosts?: boolean;
}): Promise<CreateNoteFigures> {
  const { probe, databaseUrl } = options;
  const minted: bigint[] = [];
  const statements = await probe.statements((ctx: Context) => {
    const recording = {
      next: () => {
        const id = ctx.ids.next();
        minted.push(id);
        return id;
      },
    };
    return createNote({ ...ctx, ids: recording } as unknown as Context, CREATE_NOTE_BODY);
  });
  const captured = (authors: bigint[]): CapturedWrite => ({
    databaseUrl,
    statements,
    minted: minted.map(String),
    author: String(options.viewerId),
    authors: authors.map(String),
  });
  const bare = async (name: string, write: CapturedWrite) => {
    const file = path.join(options.dataDir, `${name}-write.json`);
    fs.writeFileSync(file, JSON.stringify(write));
    const { port, stop } = await startBareServer("bare-write.ts", file);
    // 32 connections, as the token lists give Murmur's runs: the bare server gives each its author.
    const run = () => load(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" });
    await run();
    return { run, stop };
  };
  const murmur = {
    oneAccount: () =>
      load(`${options.serverUrl}/notes`, {
        token: options.token,
        method: "POST",
        body: JSON.stringify(CREATE_NOTE_BODY),
      }),
    authors: () =>
      load(`${options.serverUrl}/notes`, {
        tokens: options.authorTokens,
        method: "POST",
        body: JSON.stringify(CREATE_NOTE_BODY),
      }),
  };
  await murmur.oneAccount();
  await murmur.authors();
  const bareOne = await bare("create-note-one", captured([options.viewerId]));
  const bareAuthors = await bare("create-note-authors", captured(options.authorIds));
  const turns = {
    murmurOne: [] as Load[],
    bareOne: [] as Load[],
    murmurAuthors: [] as Load[],
    bareAuthors: [] as Load[],
  };
  try {
    for (let turn = 0; turn < 3; turn++) {
      turns.murmurOne.push(await murmur.oneAccount());
      turns.bareOne.push(await bareOne.run());
      turns.murmurAuthors.push(await murmur.authors());
      turns.bareAuthors.push(await bareAuthors.run());
    }
    const figures: CreateNoteFigures = {
      murmur: { oneAccount: medianRun(turns.murmurOne), authors: medianRun(turns.murmurAuthors) },
      bare: { oneAccount: medianRun(turns.bareOne), authors: medianRun(turns.bareAuthors) },
      statements: statements.length,
    };
    if (options.explain) figures.plans = await explainWrite(databaseUrl, statements, minted);
    if (options.triggerCosts) {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      figures.withoutTrigger = {};
      try {
        for (const [table, trigger] of TRIGGERS) {
          // In turns: with it, without it.
          const withIt: Load[] = [];
          const without: Load[] = [];
          for (let turn = 0; turn < 2; turn++) {
            withIt.push(await bareAuthors.run());
            await client.query(`ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`);
            try {
              without.push(await bareAuthors.run());
            } finally {
              await client.query(`ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`);
            }
          }
          figures.withoutTrigger[trigger] = {
            withIt: Math.max(...withIt.map((l) => l.reqPerSec)),
            bare: Math.max(...without.map((l) => l.reqPerSec)),
          };
        }
      } finally {
        await client.end();
      }
    }
    return figures;
  } finally {
    bareOne.stop();
    bareAuthors.stop();
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of each statement with fresh ids, in a transaction rolled back. */
async function explainWrite(
  databaseUrl: string,
  statements: { query: string; params: unknown[] }[],
  minted: bigint[],
): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const fresh = new Map(minted.map((id) => [String(id), String(id + 1_000_000n)]));
  const bind = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(bind) : (fresh.get(String(v)) ?? (v as string | number | null));
  try {
    const plans: string[] = [];
    for (const { query, params } of statements) {
      await client.query("BEGIN");
      try {
        // Twice: the first plans and warms the caches; the second is the one shown.
        await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${query}`, params.map(bind));
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${query}`, params.map(bind));
        plans.push(rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n"));
      } finally {
        await client.query("ROLLBACK");
      }
    }
    return plans;
  } finally {
    await client.end();
  }
}

/** The table rows and goals run.ts prints. */
export function createNoteRows(figures: CreateNoteFigures, before?: CreateNoteFigures) {
  const row = (l: Load, was?: Load) => ({
    "req/s": l.reqPerSec,
    "p50 ms": l.p50,
    "p99 ms": l.p99,
    "before req/s": was?.reqPerSec ?? "",
    errors: l.errors,
  });
  return {
    rows: {
      "create note, one account on 32 connections": row(figures.murmur.oneAccount, before?.murmur.oneAccount),
      "  bare, same statements, one account": row(figures.bare.oneAccount, before?.bare.oneAccount),
      "create note, 32 authors": row(figures.murmur.authors, before?.murmur.authors),
      "  bare, same statements, 32 authors": row(figures.bare.authors, before?.bare.authors),
    },
    goals: {
      "note creation by 32 authors >= 1,500/s": `${figures.murmur.authors.reqPerSec}/s (${(figures.murmur.authors.reqPerSec / figures.bare.authors.reqPerSec).toFixed(2)}x the bare handler's ${figures.bare.authors.reqPerSec}/s)`,
      "note creation by one account on 32 connections >= 1,000/s": `${figures.murmur.oneAccount.reqPerSec}/s (${(figures.murmur.oneAccount.reqPerSec / figures.bare.oneAccount.reqPerSec).toFixed(2)}x the bare handler's ${figures.bare.oneAccount.reqPerSec}/s)`,
    },
  };
}
