// `npm run bench [-- --explain]`: Murmur on a seeded database of its own, driven by autocannon
// at 32 connections; one table, also written to bench/results.json. Figures, never assertions.
// BENCH_ACCOUNTS (default 10,000) and BENCH_NOTES (default 1,000,000) size the data.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { addNotes, seed } from "../src/cli/seed.ts";
import type { Context } from "../src/domain/context.ts";
import { listNotes } from "../src/domain/lists/service.ts";
import { searchNotes } from "../src/domain/search/service.ts";
import { accountTimeline, timeline } from "../src/domain/timelines/service.ts";
import { fullNotesJson } from "../src/rest/views/note-sql.ts";
import { closeServices } from "../src/services.ts";
import { startTestS3 } from "../test/support/s3.ts";
import { benchChurn } from "./churn.ts";
import { benchCreateNote, type CreateNoteFigures, createNoteRows } from "./create-note.ts";
import { benchFederation, type FederationFigures, printFederation } from "./federation.ts";
import { benchFederationScale, printFederationScale, SCALE_BENCHES, type ScaleFigures } from "./federation-scale.ts";
import { benchGetNote, benchGetNoteAlone, type GetNoteFigures, printGetNote } from "./get-note.ts";
import { benchHostile } from "./hostile.ts";
import { benchIdle } from "./idle.ts";
import { benchLive } from "./live.ts";
import { type Load, load, medianRun } from "./load.ts";
import { benchLoginBurst } from "./login-burst.ts";
import { benchSearch, KEYWORD, OTHER_KEYWORD } from "./search.ts";
import { benchSerialise } from "./serialise.ts";
import { benchServices, startBareServer, startBenchServer } from "./server.ts";
import { SqlProbe } from "./sql.ts";
import { benchUpload } from "./upload.ts";

const explain = process.argv.includes("--explain");
// `npm run bench -- --only get-note`: that bench alone, on a database of its own (bench/get-note.ts).
if (process.argv.includes("--only") && process.argv[process.argv.indexOf("--only") + 1] === "get-note") {
  await benchGetNoteAlone(explain);
  process.exit(0);
}
// `--only <name>`: one bench alone on a seeded database (bench/only.ts), nothing else, no results.json.
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;
if (only !== undefined) {
  await (await import("./only.ts")).runOnly(only);
  process.exit(0);
}
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
const totalNotes = Number(process.env.BENCH_NOTES ?? 1_000_000);
const SMALL = 10_000;

/** A process's resident memory in kB, from /proc (Linux); NaN elsewhere. */
function serverRssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  } catch {
    return Number.NaN;
  }
}

/** A process's resident memory in MB; null where it cannot be read. */
function serverRssMb(pid: number): number | null {
  const kb = serverRssKb(pid);
  return Number.isNaN(kb) ? null : Math.round(kb / 1024);
}

/** The last run's figures (bench/results.json before this run writes it), shown beside the new ones. */
const previous = (() => {
  try {
    return JSON.parse(fs.readFileSync(new URL("./results.json", import.meta.url), "utf8")) as {
      date?: string;
      atLarge?: Record<string, Load>;
      bareHome?: Load;
      getNote?: GetNoteFigures;
      createNote?: CreateNoteFigures;
      federation?: FederationFigures;
      federationScale?: ScaleFigures;
    };
  } catch {
    return {};
  }
})();

const server = await startBenchServer();
const services = await benchServices(server);
try {
  await fetch(`${server.url}/drive`, { headers: { authorization: `Bearer ${server.token}` } });
  const upload = await benchUpload(server);
  // The same upload into an S3 bucket (s3rver, a real S3 server), through a second server on the
  // same database: the bucket's store must not hold an upload whole either.
  const s3 = await startTestS3();
  const s3Server = await startBenchServer({ env: s3.env, databaseUrl: server.databaseUrl, name: "bucketbencher" });
  const uploadS3 = await benchUpload(s3Server).finally(async () => {
    await s3Server.stop();
    await s3.close();
  });
  // 32 connections logging in at the production bcrypt cost, and /healthz meanwhile.
  const loginBurst = await benchLoginBurst(server.databaseUrl);
  // A fresh instance as `npm start` runs it: start time and idle memory.
  const idle = await benchIdle(server.databaseUrl);
  // Two servers of their own hosts and databases, federating.
  const federation = await benchFederation();
  // A server of its own against 500 simulated servers: fan-out, intake, a dead server (bench/federation-scale.ts).
  const federationScale = await benchFederationScale(SCALE_BENCHES);
  // An anonymous request of 1,000 aliases of searchNotes: refused (400) before anything runs.
  // Sent 6 times: the first, and the median of the other 5; the server's RSS around them.
  const aliasQuery = `{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: searchNotes(query: "x") { __typename }`).join(" ")} }`;
  const aliasRssBefore = serverRssMb(server.pid);
  const aliasTimes: number[] = [];
  let aliasStatus = 0;
  for (let i = 0; i < 6; i++) {
    const started = performance.now();
    const answer = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: aliasQuery }),
    });
    await answer.arrayBuffer();
    aliasStatus = answer.status;
    aliasTimes.push(Math.round((performance.now() - started) * 10) / 10);
  }
  const aliasRefusal = {
    status: aliasStatus,
    firstMs: aliasTimes[0],
    medianMs: [...aliasTimes.slice(1)].sort((a, b) => a - b)[2],
    rssBeforeMb: aliasRssBefore,
    rssAfterMb: serverRssMb(server.pid),
  };

  // Forced: the bench's own accounts (bencher, bucketbencher) are there already.
  const seeded = await seed(services, server.databaseUrl, {
    accounts,
    notes: SMALL,
    passphrase: "seed-passphrase",
    force: true,
  });
  const login = await fetch(`${server.url}/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "viewer", passphrase: "seed-passphrase", captcha_token: "ok" }),
  }).then((r) => r.json() as Promise<{ authorization_token: string }>);
  const token = login.authorization_token;
  // 32 seeded authors, one per connection, for note creation by many accounts at once.
  const authorTokens: string[] = [];
  for (let i = 101; i <= 132; i++) {
    const answer = await fetch(`${server.url}/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: `seed${i}`, passphrase: "seed-passphrase", captcha_token: "ok" }),
    }).then((r) => r.json() as Promise<{ authorization_token: string }>);
    authorTokens.push(answer.authorization_token);
  }
  const pages: Record<string, { url: string; page: (ctx: Context) => Promise<unknown> }> = {
    // Each page as REST reads it: its notes written as JSON by PostgreSQL (src/rest/views/note-sql.ts).
    "home timeline": { url: "/timeline/home", page: (ctx) => timeline(ctx, "home", {}, fullNotesJson) },
    "global timeline": { url: "/timeline/global", page: (ctx) => timeline(ctx, "global", {}, fullNotesJson) },
    "account timeline": {
      url: `/timeline/accounts/${seeded.busyAuthorId}`,
      page: (ctx) => accountTimeline(ctx, seeded.busyAuthorId.toString(), {}, fullNotesJson),
    },
    "list timeline": {
      url: `/lists/${seeded.listId}/notes`,
      page: (ctx) => listNotes(ctx, seeded.listId.toString(), {}, fullNotesJson),
    },
  };
  const atSmall: Record<string, Load> = {};
  for (const [name, { url }] of Object.entries(pages)) {
    // Warmed as the runs at 1M are, so the two sizes compare like with like.
    await load(`${server.url}${url}`, { token });
    atSmall[name] = await load(`${server.url}${url}`, { token });
  }

  const seededAt = performance.now();
  const notesPerSecond = await addNotes(server.databaseUrl, seeded, totalNotes - SMALL);
  const seedSeconds = (performance.now() - seededAt) / 1000;
  // As a running server's database would be: vacuumed, so autovacuum does not wake up on the
  // freshly inserted million rows in the middle of the first runs; and checkpointed, so they do
  // not share the disk with the flush of the seed.
  await services.db.$executeRawUnsafe("VACUUM (ANALYZE)");
  await services.db.$executeRawUnsafe("CHECKPOINT");

  const probe = await SqlProbe.open(services, server.databaseUrl, seeded.viewerId);
  const newest = await services.db.note.findFirst({ where: { visibility: "public" }, orderBy: { id: "desc" } });
  const graphqlHome = JSON.stringify({
    query:
      "{ homeTimeline { ... on NoteConnection { edges { node { id content createdAt author { name nickname } reactions { ... on ReactionConnection { edges { node { emoji reactedBy } } } } reactionCount attachments { url mime } } } } } }",
  });
  const runs: Record<string, () => Promise<Load>> = {
    ...Object.fromEntries(
      Object.entries(pages).map(([name, { url }]) => [name, () => load(`${server.url}${url}`, { token })]),
    ),
    "get note": () => load(`${server.url}/notes/${newest?.id}`, { token }),
    notifications: () => load(`${server.url}/notifications`, { token }),
    "search (keyword)": () => load(`${server.url}/search/notes?query=${KEYWORD}`, { token }),
    "create note": () =>
      load(`${server.url}/notes`, {
        token,
        method: "POST",
        body: JSON.stringify({ content: "benchmark note @seed3" }),
      }),
    "create note (32 authors)": () =>
      load(`${server.url}/notes`, {
        tokens: authorTokens,
        method: "POST",
        body: JSON.stringify({ content: "benchmark note @seed3" }),
      }),
    "GraphQL home timeline": () => load(`${server.url}/graphql`, { token, method: "POST", body: graphqlHome }),
  };
  const atLarge: Record<string, Load> = {};
  for (const [name, run] of Object.entries(runs)) {
    // Warmed on itself: each pooled connection has prepared the run's statements.
    await load(`${server.url}/healthz`, { duration: 1 });
    await run();
    atLarge[name] = await run();
  }

  // The bare baseline: exactly the statements one home page sends (the caller's account comes
  // from Murmur's cache once warm, so the bare handler does not look it up either). Beside it,
  // for reference, the bare handler replaying the statement GraphQL's home page sends (notes as
  // NoteViews, the one REST sent until 2026-11-25).
  const bareOf = async (name: string, page: (ctx: Context) => Promise<unknown>) => {
    const file = path.join(server.dataDir, `${name}-statements.json`);
    const statements = await probe.statements(page);
    fs.writeFileSync(file, JSON.stringify({ databaseUrl: server.databaseUrl, statements }));
    const { port, stop } = await startBareServer("bare.ts", file);
    const run = () => load(`http://127.0.0.1:${port}/`);
    await run();
    return { run, stop };
  };
  const bare = await bareOf("home", pages["home timeline"].page);
  const bareNoteViews = await bareOf("home-noteviews", (ctx) => timeline(ctx, "home", {}));
  // Murmur's home timeline and the bare handlers take turns, three runs each, and each keeps its
  // median: this machine's speed drifts by a third over minutes, so runs far apart in time
  // would compare the machine's moments, not the servers.
  const turns: { murmur: Load[]; bare: Load[]; bareNoteViews: Load[] } = { murmur: [], bare: [], bareNoteViews: [] };
  for (let turn = 0; turn < 3; turn++) {
    turns.murmur.push(await runs["home timeline"]());
    turns.bare.push(await bare.run());
    turns.bareNoteViews.push(await bareNoteViews.run());
  }
  bare.stop();
  bareNoteViews.stop();
  atLarge["home timeline"] = medianRun(turns.murmur);
  const bareHome = medianRun(turns.bare);
  const bareHomeNoteViews = medianRun(turns.bareNoteViews);
  // GET /notes/{id} beside a bare handler of its own statements, in turns (bench/get-note.ts).
  const getNote = await benchGetNote({
    url: server.url,
    pid: server.pid,
    token,
    probe,
    noteId: String(newest?.id),
    dataDir: server.dataDir,
    databaseUrl: server.databaseUrl,
  });
  // POST /notes beside a bare handler of its own statements, in turns (bench/create-note.ts).
  const createNote = await benchCreateNote({
    services,
    probe,
    databaseUrl: server.databaseUrl,
    dataDir: server.dataDir,
    serverUrl: server.url,
    token,
    viewerId: seeded.viewerId,
    authorTokens,
    authorIds: (
      await services.db.account.findMany({
        where: { name: { in: Array.from({ length: 32 }, (_, i) => `seed${101 + i}`) } },
      })
    ).map((a) => a.id),
    explain,
  });

  const queriesPerPage: Record<string, number> = {};
  const plans: Record<string, string> = {};
  for (const [name, { page }] of Object.entries(pages)) {
    // The caller's account comes from the cache (read once, then on a change to it).
    queriesPerPage[name] = (await probe.statements(page)).length;
    plans[name] = await probe.explainNotes(page);
  }
  plans["search (keyword)"] = await probe.explainNotes((ctx) => searchNotes(ctx, KEYWORD));
  const serialise = await benchSerialise(probe.context);
  const search = await benchSearch(probe.context, services.config, [
    KEYWORD,
    `${KEYWORD} ${OTHER_KEYWORD}`,
    `"${KEYWORD}"`,
    `${KEYWORD} OR ${OTHER_KEYWORD}`,
    `from:seed3 ${KEYWORD}`,
  ]);
  await probe.close();
  // Last: it adds a crowd of accounts, a viral note and a star author to the database.
  const hostile = await benchHostile(services, server.url, seeded, token, server.pid);
  let freshServers = 0;
  const live = await benchLive(services, server.url, token, async () => {
    const fresh = await startBenchServer({ databaseUrl: server.databaseUrl, name: `livebencher${++freshServers}` });
    return { url: fresh.url, rssMb: () => serverRssKb(fresh.pid) / 1024, stop: () => fresh.stop() };
  });
  const churn = await benchChurn(services, server.url, async () => {
    const fresh = await startBenchServer({ databaseUrl: server.databaseUrl, name: `churnbencher` });
    return { url: fresh.url, stop: () => fresh.stop() };
  });

  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const rows = Object.fromEntries(
    Object.entries(atLarge).map(([name, l]) => [
      name,
      {
        "req/s": l.reqPerSec,
        "p50 ms": l.p50,
        "p99 ms": l.p99,
        [`p99 at ${SMALL / 1000}k notes`]: atSmall[name]?.p99 ?? "",
        "before req/s": previous.atLarge?.[name]?.reqPerSec ?? "",
        "before p99": previous.atLarge?.[name]?.p99 ?? "",
        "queries/page": queriesPerPage[name] ?? "",
        "seq scan of notes": name in plans ? /Seq Scan on notes/.test(plans[name]) : "",
        errors: l.errors,
      },
    ]),
  );
  rows["bare, GraphQL's home SQL (reference)"] = {
    "req/s": bareHomeNoteViews.reqPerSec,
    "p50 ms": bareHomeNoteViews.p50,
    "p99 ms": bareHomeNoteViews.p99,
    errors: bareHomeNoteViews.errors,
  } as never;
  rows["bare Fastify + pg (home SQL)"] = {
    "req/s": bareHome.reqPerSec,
    "p50 ms": bareHome.p50,
    "p99 ms": bareHome.p99,
    "before req/s": previous.bareHome?.reqPerSec ?? "",
    "before p99": previous.bareHome?.p99 ?? "",
    errors: bareHome.errors,
  } as never;
  const home = atLarge["home timeline"];
  const goals = {
    "REST home >= 0.8x bare": `${(home.reqPerSec / bareHome.reqPerSec).toFixed(2)}x (${(home.reqPerSec / bareHomeNoteViews.reqPerSec).toFixed(2)}x the bare handler on GraphQL's statement)`,
    "timeline p99 at 1M <= 1.5x p99 at 10k": Object.fromEntries(
      Object.keys(pages).map((name) => [name, `${(atLarge[name].p99 / Math.max(atSmall[name].p99, 1)).toFixed(2)}x`]),
    ),
    "home p99 < 50 ms (viewer follows 5,000)": `${home.p99} ms`,
    "GraphQL home >= 0.9x REST": `${(atLarge["GraphQL home timeline"].reqPerSec / home.reqPerSec).toFixed(2)}x`,
    "keyword search >= 300 req/s, p99 < 150 ms": `${atLarge["search (keyword)"].reqPerSec} req/s, p99 ${atLarge["search (keyword)"].p99} ms`,
    "note creation >= 1,000/s": `${atLarge["create note"].reqPerSec}/s by one account, ${atLarge["create note (32 authors)"].reqPerSec}/s by 32`,
  };
  console.log(
    `\nMurmur on ${machine}; ${totalNotes.toLocaleString("en")} notes by ${accounts.toLocaleString("en")} accounts (notes seeded at ${notesPerSecond.toLocaleString("en")}/s in ${seedSeconds.toFixed(0)} s); 32 connections; "before": the run of ${previous.date ?? "(none)"}:\n`,
  );
  console.table(rows);
  console.log("\nGoals:", JSON.stringify(goals, null, 2));
  printGetNote(getNote, explain, previous.getNote);
  const createNoteTable = createNoteRows(createNote, previous.createNote);
  console.log("\nNote creation beside its bare handler (bench/create-note.ts):");
  console.table(createNoteTable.rows);
  console.log("Goals:", JSON.stringify(createNoteTable.goals, null, 2));
  if (explain)
    for (const plan of createNote.plans ?? []) console.log(`\nEXPLAIN (ANALYZE, BUFFERS) create note:\n${plan}`);
  console.log(
    `\nUpload 100 MB: ${upload.megabytesPerSecond} MB/s, peak RSS growth ${upload.peakRssGrowthMb} MB to the local folder; ${uploadS3.megabytesPerSecond} MB/s, ${uploadS3.peakRssGrowthMb} MB to an S3 bucket (goal < 64 MB)`,
  );
  console.log(
    `Serialising a home page of 20 notes (${serialise.bytes.toLocaleString("en")} bytes): JSON.stringify ${serialise.jsonStringifyMicros} µs, response schema ${serialise.schemaMicros} µs`,
  );
  console.log(
    `GraphQL, 1,000 aliases of searchNotes: ${aliasRefusal.status} in ${aliasRefusal.firstMs} ms the first time, ${aliasRefusal.medianMs} ms (median) after; server RSS ${aliasRefusal.rssBeforeMb} -> ${aliasRefusal.rssAfterMb} MB`,
  );
  console.log(
    `Fresh instance (compiled, as npm start runs it): started in ${idle.startMs} ms; idle RSS after its first requests ${idle.idleRssMb} MB (goal < 150)`,
    `Login burst (32 connections logging in, bcrypt cost 11): ${loginBurst.loginsPerSec} logins/s; /healthz meanwhile p50 ${loginBurst.healthzP50} ms, p99 ${loginBurst.healthzP99} ms (goal < 20)`,
  );
  console.log(
    `\nSearch, one query at a time (ms; * = Meilisearch narrowed it)${search.meilisearchRebuildSeconds === undefined ? ", PostgreSQL only: set MEILI_URL for Meilisearch" : `, Meilisearch index rebuilt in ${search.meilisearchRebuildSeconds} s`}:`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(search.postgresql).map(([query, pg]) => {
        const meili = search.meilisearch[query];
        return [
          query,
          {
            "PostgreSQL p50": pg.p50,
            "PostgreSQL p99": pg.p99,
            found: pg.found,
            ...(meili && {
              "Meilisearch p50": `${meili.p50}${meili.narrowed ? "*" : ""}`,
              "Meilisearch p99": meili.p99,
            }),
          },
        ];
      }),
    ),
  );
  console.log("\nHostile scale, each beside the same measure on ordinary data in this run:");
  console.table(
    Object.fromEntries(
      Object.entries(hostile.scenarios).flatMap(([name, { murmur, baseline }]) => [
        [name, murmur],
        [`${name} (baseline)`, baseline],
      ]),
    ),
  );
  console.log(
    `32 connections reacting to one note, each request another account: ${hostile.reactionsPerSecond.reqPerSec} reactions/s (goal >= 1,000) (p99 ${hostile.reactionsPerSecond.p99} ms, ${hostile.reactionsPerSecond.refused} refused)`,
  );
  console.log(
    `\nLive: ${live.streams.toLocaleString("en")} SSE streams (home and global of ${(live.streams / 2).toLocaleString("en")} followers), their author posting ${live.notesPerSecond} notes/s: ` +
      `${live.delivered.toLocaleString("en")} of ${live.expected.toLocaleString("en")} deliveries, latency (${live.timedDeliveries.toLocaleString("en")} of them, ${live.timedStreams} timed streams) p50 ${live.latencyP50} ms, p99 ${live.latencyP99} ms (goal < 150), ` +
      `${live.rssPerIdleStreamKb} KB per idle stream (goal < 10; ${live.rssPerOpeningKb} KB a stream's opening grew the heap by); ` +
      `global timeline ${live.globalTimeline.withStreams} req/s meanwhile, ${live.globalTimeline.quiet} without streams (medians of ${live.globalTimeline.turns?.quiet.length ?? 1} runs each, in turns; goal >= 0.6x)`,
  );
  console.log(
    `Resumed streams: ${churn.streams} global streams on two servers, ${churn.notesPerSecond} notes/s by 8 writers, ${churn.reconnects} abrupt reconnects with Last-Event-ID on the other server (and ${churn.endedByServer} streams the server ended, resumed at once): ` +
      `${churn.events.toLocaleString("en")} events, ${churn.lost} lost, ${churn.repeated} repeated (goal 0 and 0), ${churn.outOfIdOrderPercent}% out of id order; ` +
      `delivery p99 ${churn.latencyP99.churning} ms, ${churn.latencyP99.steady} ms without the reconnects`,
  );
  printFederation(federation, previous.federation);
  printFederationScale(federationScale, previous.federationScale);
  if (explain)
    for (const [name, plan] of Object.entries(plans)) console.log(`\nEXPLAIN (ANALYZE, BUFFERS) ${name}:\n${plan}`);
  fs.writeFileSync(
    new URL("./results.json", import.meta.url),
    `${JSON.stringify({ machine, date: new Date().toISOString(), accounts, notes: totalNotes, notesPerSecond, upload, uploadS3, atSmall, atLarge, bareHome, bareHomeNoteViews, getNote, createNote, queriesPerPage, goals, serialise, aliasRefusal, loginBurst, idle, search, hostileScale: hostile.scenarios, reactionsPerSecond: hostile.reactionsPerSecond, live, churn, federation, federationScale, plans }, null, 2)}\n`,
  );
} finally {
  await closeServices(services);
  await server.stop();
}
