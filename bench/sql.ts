// The SQL one page sends: the services' own code run on a Prisma client that reports its
// statements, to count them, to replay them in the bare baseline, and to EXPLAIN them.
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { Context, Services } from "../src/domain/context.ts";
import { PrismaClient } from "../src/generated/prisma/client.ts";

export interface Statement {
  query: string;
  params: unknown[];
}

export class SqlProbe {
  private readonly captured: Statement[] = [];

  private constructor(
    private readonly db: PrismaClient,
    /** The viewer's context, on the probe's connection. */
    readonly context: Context,
    private readonly databaseUrl: string,
  ) {}

  static async open(services: Services, databaseUrl: string, viewerId: bigint): Promise<SqlProbe> {
    const db = new PrismaClient({
      adapter: new PrismaPg({ connectionString: databaseUrl }),
      log: [{ emit: "event", level: "query" }],
    });
    const viewer = await db.account.findUniqueOrThrow({ where: { id: viewerId } });
    const ctx = { ...services, db, caller: { account: viewer } } as unknown as Context;
    const probe = new SqlProbe(db, ctx, databaseUrl);
    db.$on("query", (e) => probe.captured.push({ query: e.query, params: JSON.parse(e.params) as unknown[] }));
    return probe;
  }

  /** The statements `page` sends, in order. */
  async statements(page: (ctx: Context) => Promise<unknown>): Promise<Statement[]> {
    this.captured.length = 0;
    await page(this.context);
    return [...this.captured];
  }

  /** EXPLAIN (ANALYZE, BUFFERS) of the page's queries that read notes in order (the walk and the page). */
  async explainNotes(page: (ctx: Context) => Promise<unknown>): Promise<string> {
    const notesQueries = (await this.statements(page)).filter(
      (s) => /FROM ("public"\.)?"?notes"?\b/.test(s.query) && /ORDER BY/.test(s.query),
    );
    if (notesQueries.length === 0) return "(no notes query)";
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    try {
      const plans: string[] = [];
      for (const { query, params } of notesQueries) {
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${query}`, params);
        plans.push(rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n"));
      }
      return plans.join("\n\n");
    } finally {
      await client.end();
    }
  }

  async close(): Promise<void> {
    await this.db.$disconnect();
  }
}

/**
 * BENCH_PG_STATEMENTS=1 (with BENCH_PG_SETTINGS=shared_preload_libraries=pg_stat_statements, and
 * pg_stat_statements.track_planning=on for the planning): what PostgreSQL spent on each statement
 * between `reset` and `print`, the costliest first; `plans` against `calls` shows a named statement
 * planned anew at every run.
 */
export const pgStatements = {
  wanted: process.env.BENCH_PG_STATEMENTS === "1",
  async reset(db: pg.ClientBase): Promise<void> {
    await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()");
  },
  async print(db: pg.ClientBase): Promise<void> {
    const { rows } = await db.query(
      `SELECT calls, plans, round(total_exec_time::numeric, 1) AS ms, round(total_plan_time::numeric, 1) AS plan_ms,
              round((total_exec_time / nullif(calls, 0))::numeric, 3) AS ms_each, rows, shared_blks_hit AS hit,
              wal_records, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
       FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 15`,
    );
    console.table(rows);
  },
};
