// Murmur server processes sharing one database, as instances of a fleet behind a load balancer
// would: each its own DATA_DIR and port, the same token key.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./net.ts";
import { start } from "./process.ts";

export interface Instance {
  url: string;
  dataDir: string;
  /** DATABASE_URL, when given: the instances on one database send each other's mail. */
  databaseUrl?: string;
  child: ChildProcess;
  /** What it logged (the last 64 KB), read so that a full pipe never stops it. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `dataDir`: an existing data folder to start on (a fresh one by default); removed at stop all the same. */
export async function startInstance(env: Record<string, string>, dataDir?: string): Promise<Instance> {
  dataDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "murmur-instance-"));
  const port = await freePort();
  const child = start("src/main.ts", [], {
    PORT: String(port),
    DATA_DIR: dataDir,
    BCRYPT_COST: "4",
    RATE_LIMIT_MULTIPLIER: "0",
    // One PUBLIC_URL for the fleet, as behind its load balancer (unset, each follows its PORT).
    PUBLIC_URL: "http://localhost:3000",
    ...env,
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("an instance did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const instance: Instance = {
    url,
    dataDir,
    databaseUrl: env.DATABASE_URL,
    child,
    output: () => output,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        await once(child, "exit");
      }
      running.delete(instance);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  running.add(instance);
  return instance;
}

const running = new Set<Instance>();

/** The instances of this test file running now on `databaseUrl`. */
export function instancesOn(databaseUrl: string | undefined): Instance[] {
  return databaseUrl === undefined ? [] : [...running].filter((i) => i.databaseUrl === databaseUrl);
}
