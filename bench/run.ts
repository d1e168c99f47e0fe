// `npm run bench`: starts Murmur on its own database, runs each benchmark, prints a table and
// writes bench/results.json. Figures, never assertions: see bench/README.md.
import fs from "node:fs";
import os from "node:os";
import { startBenchServer } from "./server.ts";
import { benchUpload } from "./upload.ts";

const server = await startBenchServer();
try {
  // A first small request warms the server (Prisma's query compiler, JIT) before measuring.
  await fetch(`${server.url}/drive`, { headers: { authorization: `Bearer ${server.token}` } });
  const upload = await benchUpload(server);
  if (upload.status !== 200) throw new Error(`the upload answered ${upload.status}`);
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
  fs.writeFileSync(
    new URL("./results.json", import.meta.url),
    `${JSON.stringify({ machine, date: new Date().toISOString(), upload }, null, 2)}\n`,
  );
} finally {
  await server.stop();
}
