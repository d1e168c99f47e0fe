// Starts Murmur as a child process for a benchmark (embedded PostgreSQL in a temporary folder
// unless DATABASE_URL is set) and gives a logged-in account on it.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.ts";
import { ensureDatabase } from "../src/db/database.ts";
import { EmbeddedPostgres } from "../src/db/embedded-postgres.ts";
import { createLogger } from "../src/log.ts";
import { type AppServices, createServices } from "../src/services.ts";
import { childrenOf } from "./load.ts";

export interface BenchServer {
  url: string;
  pid: number;
  token: string;
  /** The account the token is for. */
  accountId: bigint;
  /** The database the server runs on, for seeding and EXPLAIN. */
  databaseUrl: string;
  /** The server's DATA_DIR (its files, for seeding). */
  dataDir: string;
  /** From spawning the process to its first /healthz answer, in ms. */
  startMs: number;
  stop(): Promise<void>;
}

const ROOT = path.resolve(import.meta.dirname, "..");
/** The server's token key, shared with the bench's own services so they can sign tokens it takes. */
export const BENCH_SIGNING_KEY = randomBytes(32).toString("base64");

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function json(url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Starts the server on DATABASE_URL, or on an embedded PostgreSQL of the benchmark's own. */
/**
 * The bench servers' outboxes: mail is sent from the database's queue after the answer, by
 * whichever server of the database takes it first.
 */
const outboxes = new Set<string>();

async function mailedVerification(email: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    for (const outbox of outboxes) {
      for (const file of fs.existsSync(outbox) ? fs.readdirSync(outbox) : []) {
        // A mail still being written (src/mail/mailer.ts): renamed once whole, read then. Read as
        // it was listed, it was sometimes gone already, and the bench failed at its start.
        if (file.endsWith(".partial")) continue;
        const mail = fs.readFileSync(path.join(outbox, file), "utf8");
        const token = /^Verification token: (\S+)$/m.exec(mail)?.[1];
        if (token && mail.includes(`To: ${email}`)) return token;
      }
    }
    if (Date.now() > deadline) throw new Error(`no verification mail to ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function startBenchServer(
  options: {
    /** More environment for the server (another store, say). */
    env?: Record<string, string>;
    /** The loopback address to listen on, its PUBLIC_URL's host: a server of its own host (federation). */
    host?: string;
    /** A database already running (another bench server's); default DATABASE_URL or a new one. */
    databaseUrl?: string;
    /** The account the server makes and logs in. */
    name?: string;
    /** As `npm start` runs it (dist/, MALLOC_ARENA_MAX=2), the default; false: through tsx. */
    compiled?: boolean;
  } = {},
): Promise<BenchServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-bench-"));
  fs.chmodSync(dataDir, 0o755);
  let cluster: EmbeddedPostgres | undefined;
  let databaseUrl = options.databaseUrl ?? process.env.DATABASE_URL;
  if (!databaseUrl) {
    // BENCH_PG_SETTINGS="name=value,name=value": more server settings, for a diagnosis
    // (shared_preload_libraries=pg_stat_statements, say).
    const settings = Object.fromEntries(
      (process.env.BENCH_PG_SETTINGS ?? "")
        .split(",")
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
    );
    // BENCH_PG_LOG=<file>: PostgreSQL's log written there (auto_explain's plans, say).
    const logFile = process.env.BENCH_PG_LOG;
    const log = logFile ? (line: string) => fs.appendFileSync(logFile, `${line}\n`) : undefined;
    cluster = new EmbeddedPostgres({ dataDir: path.join(dataDir, "pg"), settings, log });
    await cluster.start();
    await ensureDatabase(cluster.url(), "murmur_bench");
    databaseUrl = cluster.url("murmur_bench");
  }
  const port = await freePort();
  const spawned = performance.now();
  // Every bench server runs as npm start runs it (dist/, built first when src/ changed): what is
  // measured is what operators run. BENCH_COMPILED=0 runs them through tsx (profiles then name
  // the TypeScript sources), which costs each request more (esbuild's helpers, the loader).
  const compiled = options.compiled ?? process.env.BENCH_COMPILED !== "0";
  if (compiled) ensureBuilt();
  const args = compiled ? [path.join(ROOT, "dist/main.js")] : ["--import", "tsx", path.join(ROOT, "src/main.ts")];
  // Flags for the server's node, e.g. BENCH_NODE_ARGS=--cpu-prof to profile it (NODE_OPTIONS refuses that one).
  if (process.env.BENCH_NODE_ARGS) args.unshift(...process.env.BENCH_NODE_ARGS.split(" "));
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      ...(compiled ? { MALLOC_ARENA_MAX: "2" } : {}),
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "warn",
      BCRYPT_COST: "4",
      // The benchmark measures speed, not the limits that would cut its load off.
      RATE_LIMIT_MULTIPLIER: "0",
      TOKEN_SIGNING_KEY: BENCH_SIGNING_KEY,
      // Servers on one database are one fleet: one PUBLIC_URL (unset, each would follow its PORT).
      PUBLIC_URL: options.host ? `http://${options.host}:${port}` : "http://localhost:3000",
      ...(options.host ? { HOST: options.host } : {}),
      ...options.env,
      // Seeded notes bypass the outbox: the server searches PostgreSQL; bench/search.ts measures
      // Meilisearch on an index rebuilt from the seed.
      MEILI_URL: "",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const url = `http://${options.host ?? "127.0.0.1"}:${port}`;
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("the server did not start");
    await new Promise((resolve) => setTimeout(resolve, compiled ? 10 : 100));
  }
  const startMs = Math.round(performance.now() - spawned);
  outboxes.add(path.join(dataDir, "outbox"));
  const { token, accountId } = await benchAccount(url, options.name ?? "bencher");
  return {
    url,
    pid: child.pid ?? 0,
    token,
    accountId,
    databaseUrl,
    dataDir,
    startMs,
    async stop() {
      child.kill("SIGTERM");
      await once(child, "exit");
      await cluster?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A verified account `name` registered on the bench server at `url`, logged in. */
export async function benchAccount(url: string, name: string): Promise<{ token: string; accountId: bigint }> {
  await json(`${url}/accounts`, {
    name,
    email: `${name}@example.com`,
    passphrase: "bench-passphrase",
    captcha_token: "ok",
  });
  const verification = await mailedVerification(`${name}@example.com`);
  await json(`${url}/accounts/${name}/verify_email`, { token: verification });
  const login = await json(`${url}/login`, { name, passphrase: "bench-passphrase", captcha_token: "ok" });
  const me = await fetch(`${url}/accounts/${name}`).then((r) => r.json() as Promise<{ id: string }>);
  return { token: login.body.authorization_token, accountId: BigInt(me.id) };
}

/** The resident set size of a process and those it started (a server's streams' process), in bytes (Linux). */
export function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const own = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
  // A child that ended meanwhile holds nothing.
  return childrenOf(pid).reduce((sum, child) => sum + (fs.existsSync(`/proc/${child}`) ? rssOf(child) : 0), own);
}

/** The in-process services on a bench server's database, as every bench's own seeding uses them. */
export function benchServices(server: BenchServer): Promise<AppServices> {
  const config = loadConfig({
    ...process.env,
    DATA_DIR: server.dataDir,
    DATABASE_URL: server.databaseUrl,
    BCRYPT_COST: "4",
    TOKEN_SIGNING_KEY: BENCH_SIGNING_KEY,
  });
  return createServices(config, server.databaseUrl, createLogger("silent"));
}

let built = false;

/** dist/ current with src/ (scripts/build.mjs --if-stale), once per bench process. */
function ensureBuilt(): void {
  if (built) return;
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });
  built = true;
}

/**
 * A bare baseline server (bench/bare.ts, bench/bare-write.ts) on a port the system picks (a random
 * one had met another process's), with its statements in `file`; profiled as the servers are
 * (BENCH_NODE_ARGS). Resolves once it says it is ready.
 */
export async function startBareServer(
  script: "bare.ts" | "bare-write.ts",
  file: string,
): Promise<{ port: number; pid: number; stop(): void }> {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_NODE_ARGS?.split(" ") ?? []),
      "--import",
      "tsx",
      path.join(import.meta.dirname, script),
      file,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = once(child, "exit").then(() => undefined);
  const started = await Promise.race([once(child.stdout!, "data"), exited]);
  if (!started) throw new Error(`the bare server (${script}) did not start`);
  const port = Number(/ready (\d+)/.exec(String(started[0]))?.[1]);
  return { port, pid: child.pid ?? 0, stop: () => child.kill("SIGTERM") };
}
