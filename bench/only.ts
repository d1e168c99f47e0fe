// `npm run bench -- --only <name>`: one bench on a database seeded as the full run's is, without
// the rest (a change to one path measured in a few minutes; bench/results.json is left as it is).
// Names, one or several separated by commas: "create note" (beside its bare baseline; with
// --explain its plans, with --trigger-costs the bare rate without each trigger), "reactions",
// "search" (keyword search by 32 connections; with --explain its plan), "federation" (two
// servers of their own, bench/federation.ts; nothing seeded), "fanout", "intake", "dead"
// (federation at scale against simulated servers, bench/federation-scale.ts; a server of their own).
import pg from "pg";
import { addNotes, seed } from "../src/cli/seed.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { closeServices } from "../src/services.ts";
import { benchCreateNote, createNoteRows } from "./create-note.ts";
import { benchFederation, printFederation } from "./federation.ts";
import { benchFederationScale, printFederationScale, SCALE_BENCHES, type ScaleBench } from "./federation-scale.ts";
import { load } from "./load.ts";
import { benchReactions } from "./react.ts";
import { KEYWORD } from "./search.ts";
import { benchServices, startBenchServer } from "./server.ts";
import { pgStatements, SqlProbe } from "./sql.ts";

const SMALL = 10_000;

export async function runOnly(name: string): Promise<void> {
  const known = ["create note", "reactions", "search", "federation", ...SCALE_BENCHES];
  const names = name.split(",");
  if (!names.every((n) => known.includes(n)))
    throw new Error(`--only takes some of (comma-separated): ${known.join(", ")}`);
  if (names.includes("federation")) printFederation(await benchFederation());
  const scale = SCALE_BENCHES.filter((n) => names.includes(n));
  if (scale.length > 0) printFederationScale(await benchFederationScale(scale));
  if (names.every((n) => n === "federation" || SCALE_BENCHES.includes(n as ScaleBench))) return;
  const accounts = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
  const totalNotes = Number(process.env.BENCH_NOTES ?? 1_000_000);
  const server = await startBenchServer();
  const services = await benchServices(server);
  let statements: pg.Client | undefined;
  try {
    const seeded = await seed(services, server.databaseUrl, {
      accounts,
      notes: SMALL,
      passphrase: "seed-passphrase",
      force: true,
    });
    await addNotes(server.databaseUrl, seeded, totalNotes - SMALL);
    await services.db.$executeRawUnsafe("VACUUM (ANALYZE)");
    await services.db.$executeRawUnsafe("CHECKPOINT");
    // The statements of the benches, without the seed's (bench/sql.ts).
    statements = pgStatements.wanted ? new pg.Client({ connectionString: server.databaseUrl }) : undefined;
    if (statements) {
      await statements.connect();
      await pgStatements.reset(statements);
    }
    const sign = async (id: bigint) => (await services.tokens.sign(id, "access")).token;
    if (names.includes("create note")) {
      const authors = await services.db.account.findMany({
        where: { name: { in: Array.from({ length: 32 }, (_, i) => `seed${101 + i}`) } },
        orderBy: { id: "asc" },
      });
      const probe = await SqlProbe.open(services, server.databaseUrl, seeded.viewerId);
      const figures = await benchCreateNote({
        services,
        probe,
        databaseUrl: server.databaseUrl,
        dataDir: server.dataDir,
        serverUrl: server.url,
        token: await sign(seeded.viewerId),
        viewerId: seeded.viewerId,
        authorTokens: await Promise.all(authors.map((a) => sign(a.id))),
        authorIds: authors.map((a) => a.id),
        explain: process.argv.includes("--explain"),
        triggerCosts: process.argv.includes("--trigger-costs"),
      });
      await probe.close();
      const { rows, goals } = createNoteRows(figures);
      console.table(rows);
      console.log("Goals:", JSON.stringify(goals, null, 2));
      if (figures.withoutTrigger) console.table(figures.withoutTrigger);
      for (const plan of figures.plans ?? []) console.log(`\nEXPLAIN (ANALYZE, BUFFERS):\n${plan}`);
    }
    if (names.includes("search")) {
      const token = await sign(seeded.viewerId);
      const url = `${server.url}/search/notes?query=${KEYWORD}`;
      await load(url, { token, duration: 2 });
      const runs = [await load(url, { token }), await load(url, { token })];
      console.log(`Keyword search "${KEYWORD}", 32 connections (goal >= 300 req/s, p99 < 150 ms):`);
      console.table(runs);
      if (process.argv.includes("--explain")) {
        const probe = await SqlProbe.open(services, server.databaseUrl, seeded.viewerId);
        console.log(await probe.explainNotes((ctx) => searchNotes(ctx, KEYWORD)));
        await probe.close();
      }
    }
    if (names.includes("reactions")) {
      const loads = await benchReactions(services, server.url, seeded.busyAuthorId, server.pid);
      console.log("Reactions to one note, 32 connections, each request another account (goal >= 1,000/s):");
      console.table(loads);
    }
    if (statements) await pgStatements.print(statements);
  } finally {
    await statements?.end();
    await closeServices(services);
    await server.stop();
  }
}
