// A Redis for the tests that need one: REDIS_URL when set, else a redis-server of this run's own
// on a free port when the binary is installed (Debian's redis-server; .ci/run installs it), else
// none, and those tests say they are skipped.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { freePort } from "./net.ts";

export interface TestRedis {
  url: string;
  stop(): Promise<void>;
}

export const redisAvailable = Boolean(process.env.REDIS_URL) || spawnSync("redis-server", ["--version"]).status === 0;

export async function startRedis(): Promise<TestRedis> {
  const given = process.env.REDIS_URL;
  if (given) return { url: given, stop: async () => {} };
  const port = await freePort();
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("Ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${seen}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}
