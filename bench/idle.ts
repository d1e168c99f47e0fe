// What an operator sees of a fresh instance (docs/running.md#health): the process as `npm start`
// runs it (compiled, MALLOC_ARENA_MAX=2), its start time (spawn to the first /healthz answer), and
// its resident memory once idle after its first requests of each kind (REST, GraphQL: Prisma's
// query compiler and the GraphQL schema are loaded). Goal: idle RSS under 150 MB.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { rssOf, startBenchServer } from "./server.ts";

export interface IdleFigures {
  startMs: number;
  idleRssMb: number;
}

const IDLE_MS = 30_000;

export async function benchIdle(databaseUrl?: string): Promise<IdleFigures> {
  // npm start's prestart: dist/ as the sources are now.
  execFileSync(process.execPath, [path.join(import.meta.dirname, "../scripts/build.mjs"), "--if-stale"], {
    stdio: "inherit",
  });
  const server = await startBenchServer({ databaseUrl, name: "idlebencher", compiled: true });
  try {
    const auth = { authorization: `Bearer ${server.token}` };
    for (const route of ["/timeline/global", "/timeline/home", "/accounts/idlebencher"]) {
      await (await fetch(`${server.url}${route}`, { headers: auth })).arrayBuffer();
    }
    const query = "{ homeTimeline { ... on NoteConnection { edges { node { id content author { name } } } } } }";
    await (
      await fetch(`${server.url}/graphql`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ query }),
      })
    ).arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    return { startMs: server.startMs, idleRssMb: Math.round(rssOf(server.pid) / 1048576) };
  } finally {
    await server.stop();
  }
}
