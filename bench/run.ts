// `npm run bench [-- --explain]`: starts Murmur on its own database, runs each benchmark,
// prints a table and writes bench/results.json. Figures, never assertions: see bench/README.md.
// BENCH_NOTES and BENCH_ACCOUNTS size the seeded dataset (default 1,000,000 and 2,000).
import fs from "node:fs";
import os from "node:os";
import { benchSearch, SEARCH_QUERIES } from "./search.ts";
import { startBenchServer } from "./server.ts";
import { explainTimelines, measure, seedTimelines } from "./timelines.ts";
import { benchUpload } from "./upload.ts";

const explain = process.argv.includes("--explain");
const notes = Number(process.env.BENCH_NOTES ?? 1_000_000);
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 2_000);

const server = await startBenchServer();
try {
  // A first small request warms the server (Prisma's query compiler, JIT) before measuring.
  await fetch(`${server.url}/drive`, { headers: { authorization: `Bearer ${server.token}` } });
  const upload = await benchUpload(server);
  if (upload.status !== 200) throw new Error(`the upload answered ${upload.status}`);

  const seeded = performance.now();
  const dataset = await seedTimelines(server, accounts, notes, Math.min(500, accounts));
  const seedSeconds = (performance.now() - seeded) / 1000;
  const timelineUrls: Record<string, string> = {
    "home (following 500)": "/timeline/home",
    global: "/timeline/global",
    account: `/timeline/accounts/${dataset.authorId}`,
    "list (30 members)": `/lists/${dataset.listId}/notes`,
  };
  const timelines: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  for (const [name, path] of Object.entries(timelineUrls)) {
    await measure(`${server.url}${path}`, server.token, 40); // warm-up
    timelines[name] = await measure(`${server.url}${path}`, server.token);
  }
  const plans = await explainTimelines(server, dataset, SEARCH_QUERIES);
  const search = await benchSearch(server);

  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  console.log(`\nMurmur benchmarks on ${machine}\n`);
  console.table({
    "upload 100 MB (POST /drive)": {
      "MB/s": upload.megabytesPerSecond,
      seconds: upload.seconds,
      "RSS before (MB)": upload.rssBeforeMb,
      "peak RSS growth (MB)": upload.peakRssGrowthMb,
      "goal: growth < 64 MB": upload.peakRssGrowthMb < 64 ? "met" : "missed",
    },
  });
  console.log(
    `\nTimelines, ${notes.toLocaleString("en")} notes by ${accounts.toLocaleString("en")} accounts (seeded in ${seedSeconds.toFixed(1)} s), 8 concurrent clients:\n`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(timelines).map(([name, t]) => {
        const plan = plans[name.split(" ")[0]] ?? "";
        return [
          name,
          {
            "req/s": t.perSecond,
            "p50 ms": t.p50,
            "p99 ms": t.p99,
            "notes scan": /Seq Scan on notes/.test(plan) ? "SEQ SCAN" : "index",
          },
        ];
      }),
    ),
  );
  console.log(
    `\nSearch (PostgreSQL backend), ${notes.toLocaleString("en")} notes, 1 client and 8 concurrent clients:\n`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(search).map(([name, t]) => [
        name,
        {
          hits: t.hits,
          "1 client p50 ms": t.single.p50,
          "1 client p99 ms": t.single.p99,
          "goal p50 < 100 ms": t.single.p50 < 100 ? "met" : "missed",
          "8 clients req/s": t.loaded.perSecond,
          "8 clients p50 ms": t.loaded.p50,
          "8 clients p99 ms": t.loaded.p99,
        },
      ]),
    ),
  );
  if (explain) {
    for (const [name, plan] of Object.entries(plans))
      console.log(`\nEXPLAIN (ANALYZE, BUFFERS) ${name} timeline:\n${plan}`);
  }
  fs.writeFileSync(
    new URL("./results.json", import.meta.url),
    `${JSON.stringify({ machine, date: new Date().toISOString(), upload, dataset: { notes, accounts }, timelines, search, plans }, null, 2)}\n`,
  );
} finally {
  await server.stop();
}
