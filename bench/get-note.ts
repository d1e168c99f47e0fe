// GET /notes/{id} beside its bare baseline: a bare Fastify + node-postgres server
// (bench/bare.ts) replaying exactly the statements one get-note request sends, captured from the
// route's own code, measured in turns with Murmur in the same run. Also what each statement
// costs (one connection, prepared, one at a time) and its EXPLAIN (ANALYZE, BUFFERS); and, for
// reference, the bare handler replaying the statements of the domain's Prisma lookup of a visible
// note (findVisibleNote: what get note sent until 2026-11-27, and what renote, reply, react and
// bookmark still send).
// `npm run bench -- --only get-note` runs this alone on a database of its own (BENCH_NOTES,
// BENCH_ACCOUNTS size it as for the whole bench; BENCH_FRESH_SERVER=1 asks a server started
// after the seed).
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { addNotes, seed } from "../src/cli/seed.ts";
import type { Context } from "../src/domain/context.ts";
import { findVisibleNote } from "../src/domain/notes/service.ts";
import type { RouteContext } from "../src/rest/route.ts";
import { noteRoutes } from "../src/rest/routes/notes.ts";
import { closeServices } from "../src/services.ts";
import { cpuMicros, type Load, load, medianRun } from "./load.ts";
import { type BenchServer, benchServices, startBareServer, startBenchServer } from "./server.ts";
import { pgStatements, SqlProbe, type Statement } from "./sql.ts";

/** One statement and what it costs alone: round trip on one connection, and PostgreSQL's own times. */
export interface StatementCost {
  query: string;
  /** Mean round trip, prepared, one at a time on one connection, in ms. */
  roundTripMs: number;
  planningMs: number;
  executionMs: number;
  /** Shared buffers hit (and read) over the whole plan. */
  buffers: string;
  /** How PostgreSQL planned its 1,050 prepared executions: generic plans kept, custom plans made. */
  plans: string;
  plan: string;
}

/**
 * A load run with its server's CPU time per request (µs, user and system, over the run): the
 * whole process's, and its main thread's (the JavaScript; the rest is V8's helpers and Node's pool).
 */
type Measured = Load & { cpuMicrosPerRequest: number; mainThreadMicrosPerRequest: number };

export interface GetNoteFigures {
  noteId: string;
  murmur: Measured;
  /** The bare handler replaying the statements REST's get note sends. */
  bare: Measured;
  /** The bare handler replaying findVisibleNote's statements (reference). */
  bareFindVisible: Measured;
  statements: StatementCost[];
  findVisibleStatements: StatementCost[];
  goal: { ratio: number; p99Ms: number; met: boolean };
}

const getNoteRoute = noteRoutes.find((r) => r.operationId === "getNote");
if (!getNoteRoute) throw new Error("no getNote route");

/** What REST's get note runs, on the probe's context: its statements, whatever they are now. */
const restGetNote = (noteId: string) => (ctx: Context) =>
  (getNoteRoute as NonNullable<typeof getNoteRoute>).run(ctx as RouteContext, {
    params: { note_id: noteId },
    query: undefined,
    body: undefined,
    headers: {},
  });

/** A load run with the server's CPU time per request it answered (µs), the cost the machine's noise moves least. */
async function measured(pid: number, run: () => Promise<Load>): Promise<Measured> {
  const [before, mainBefore] = [cpuMicros(pid), cpuMicros(pid, pid)];
  const started = performance.now();
  const figures = await run();
  const requests = figures.reqPerSec * ((performance.now() - started) / 1000);
  return {
    ...figures,
    cpuMicrosPerRequest: Math.round((cpuMicros(pid) - before) / requests),
    mainThreadMicrosPerRequest: Math.round((cpuMicros(pid, pid) - mainBefore) / requests),
  };
}

async function costs(databaseUrl: string, statements: Statement[]): Promise<StatementCost[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const costed: StatementCost[] = [];
    for (const [i, { query, params }] of statements.entries()) {
      const named = { name: `cost${i}`, text: query, values: params };
      for (let warm = 0; warm < 50; warm++) await client.query(named);
      const times = 1000;
      const started = performance.now();
      for (let n = 0; n < times; n++) await client.query(named);
      const roundTripMs = (performance.now() - started) / times;
      // Whether PostgreSQL kept a generic plan for it, or planned each execution anew.
      const [plans] = (
        await client.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1", [
          named.name,
        ])
      ).rows as { generic_plans: string; custom_plans: string }[];
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${query}`, params);
      const plan = rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
      const time = (label: string) => Number(new RegExp(`${label} Time: ([\\d.]+) ms`).exec(plan)?.[1] ?? Number.NaN);
      costed.push({
        query,
        roundTripMs: Math.round(roundTripMs * 1000) / 1000,
        planningMs: time("Planning"),
        executionMs: time("Execution"),
        // The first Buffers line is the plan's top node: the whole statement's.
        buffers: /Buffers: ([^\n]+)/.exec(plan)?.[1] ?? "none",
        plans: `${plans.generic_plans} generic, ${plans.custom_plans} custom`,
        plan,
      });
    }
    return costed;
  } finally {
    await client.end();
  }
}

async function startBare(dataDir: string, databaseUrl: string, name: string, statements: Statement[]) {
  const file = path.join(dataDir, `${name}-statements.json`);
  fs.writeFileSync(file, JSON.stringify({ databaseUrl, statements }));
  const { port, pid, stop } = await startBareServer("bare.ts", file);
  const run = () => measured(pid, () => load(`http://127.0.0.1:${port}/`));
  await run(); // warm: each pooled connection prepares the statements
  return { run, stop };
}

/**
 * Murmur's GET /notes/{noteId} as `token`'s account (the probe's viewer), beside the bare
 * handlers, in turns: three runs each, each keeping its median (bench/README.md says why).
 */
export async function benchGetNote(options: {
  url: string;
  /** Murmur's process, whose CPU time per request is measured. */
  pid: number;
  token: string;
  probe: SqlProbe;
  noteId: string;
  dataDir: string;
  databaseUrl: string;
}): Promise<GetNoteFigures> {
  const { url, pid, token, probe, noteId, dataDir, databaseUrl } = options;
  const statements = await probe.statements(restGetNote(noteId));
  const findVisibleStatements = await probe.statements((ctx) => findVisibleNote(ctx, noteId));
  const murmur = () => measured(pid, () => load(`${url}/notes/${noteId}`, { token }));
  await load(`${url}/healthz`, { duration: 1 });
  await murmur();
  const bare = await startBare(dataDir, databaseUrl, "get-note", statements);
  const bareFindVisible = await startBare(dataDir, databaseUrl, "get-note-find-visible", findVisibleStatements);
  const turns: Measured[][] = [[], [], []];
  try {
    for (let turn = 0; turn < 3; turn++) {
      turns[0].push(await murmur());
      turns[1].push(await bare.run());
      turns[2].push(await bareFindVisible.run());
    }
  } finally {
    bare.stop();
    bareFindVisible.stop();
  }
  const [m, b, r] = turns.map(medianRun);
  const ratio = Math.round((m.reqPerSec / b.reqPerSec) * 100) / 100;
  return {
    noteId,
    murmur: m,
    bare: b,
    bareFindVisible: r,
    statements: await costs(databaseUrl, statements),
    findVisibleStatements: await costs(databaseUrl, findVisibleStatements),
    goal: { ratio, p99Ms: m.p99, met: ratio >= 0.8 && m.p99 < 40 },
  };
}

export function printGetNote(figures: GetNoteFigures, explain: boolean, before?: GetNoteFigures): void {
  const row = (l: Measured, was?: Load) => ({
    "req/s": l.reqPerSec,
    "p50 ms": l.p50,
    "p99 ms": l.p99,
    "server CPU µs/req": l.cpuMicrosPerRequest,
    "main thread µs/req": l.mainThreadMicrosPerRequest,
    "before req/s": was?.reqPerSec ?? "",
    "before p99": was?.p99 ?? "",
    errors: l.errors,
  });
  console.log(`\nGet note (GET /notes/${figures.noteId}), in turns with its bare baseline:`);
  console.table({
    "Murmur get note": row(figures.murmur, before?.murmur),
    [`bare Fastify + pg, get note's ${figures.statements.length} statement(s)`]: row(figures.bare, before?.bare),
    [`bare, findVisibleNote's ${figures.findVisibleStatements.length} statements (reference)`]: row(
      figures.bareFindVisible,
      before?.bareFindVisible,
    ),
  });
  console.log(
    `Goal get note >= 0.8x bare and p99 < 40 ms: ${figures.goal.ratio}x, p99 ${figures.goal.p99Ms} ms: ${figures.goal.met ? "met" : "not met"}`,
  );
  for (const [name, list] of [
    ["get note", figures.statements],
    ["findVisibleNote (reference)", figures.findVisibleStatements],
  ] as const) {
    console.log(`\nStatements of ${name} (one connection, prepared, one at a time):`);
    console.table(
      list.map((s) => ({
        statement: s.query.replace(/\s+/g, " ").slice(0, 70),
        "round trip ms": s.roundTripMs,
        "planning ms": s.planningMs,
        "execution ms": s.executionMs,
        buffers: s.buffers,
        plans: s.plans,
      })),
    );
    if (explain) for (const s of list) console.log(`\n${s.query}\n${s.plan}`);
  }
}

/** `npm run bench -- --only get-note [--explain]`: this bench alone, on a seeded database of its own. */
export async function benchGetNoteAlone(explain: boolean): Promise<void> {
  const accounts = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
  const totalNotes = Number(process.env.BENCH_NOTES ?? 1_000_000);
  const server = await startBenchServer();
  const services = await benchServices(server);
  let fresh: BenchServer | undefined;
  try {
    const seeded = await seed(services, server.databaseUrl, {
      accounts,
      notes: Math.min(10_000, totalNotes),
      passphrase: "seed-passphrase",
      force: true,
    });
    if (totalNotes > 10_000) await addNotes(server.databaseUrl, seeded, totalNotes - 10_000);
    await services.db.$executeRawUnsafe("VACUUM (ANALYZE)");
    await services.db.$executeRawUnsafe("CHECKPOINT");
    const login = await fetch(`${server.url}/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "viewer", passphrase: "seed-passphrase", captcha_token: "ok" }),
    }).then((r) => r.json() as Promise<{ authorization_token: string }>);
    const probe = await SqlProbe.open(services, server.databaseUrl, seeded.viewerId);
    // The note the whole bench gets: the newest public one.
    const newest = await services.db.note.findFirstOrThrow({
      where: { visibility: "public" },
      orderBy: { id: "desc" },
    });
    // The statements of the bench, without the seed's (BENCH_PG_STATEMENTS, bench/sql.ts).
    const statements = pgStatements.wanted ? new pg.Client({ connectionString: server.databaseUrl }) : undefined;
    await statements?.connect();
    if (statements) await pgStatements.reset(statements);
    // BENCH_FRESH_SERVER=1: the note is asked of a second server started after the seed, beside
    // the one that was running while it was written (bench/README.md says what that changes).
    if (process.env.BENCH_FRESH_SERVER === "1") {
      fresh = await startBenchServer({ databaseUrl: server.databaseUrl, name: "fresh-bencher" });
    }
    const asked = fresh ?? server;
    const figures = await benchGetNote({
      url: asked.url,
      pid: asked.pid,
      token: login.authorization_token,
      probe,
      noteId: newest.id.toString(),
      dataDir: server.dataDir,
      databaseUrl: server.databaseUrl,
    });
    await probe.close();
    if (statements) {
      await pgStatements.print(statements);
      await statements.end();
    }
    let before: GetNoteFigures | undefined;
    try {
      before = JSON.parse(fs.readFileSync(new URL("./results.json", import.meta.url), "utf8")).getNote;
    } catch {}
    console.log(
      `\n${totalNotes.toLocaleString("en")} notes by ${accounts.toLocaleString("en")} accounts; 32 connections`,
    );
    printGetNote(figures, explain, before);
  } finally {
    await fresh?.stop();
    await closeServices(services);
    await server.stop();
  }
}
