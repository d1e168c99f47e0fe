// `npm start` end to end: an embedded PostgreSQL under DATA_DIR, migrations at start, data kept
// across restarts, graceful shutdown on SIGTERM, and a bad setting stopping it with one line.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./support/net.ts";
import { ROOT, run, start } from "./support/process.ts";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-start-"));
// Reachable by the postgres user, so the cluster sits in DATA_DIR/pg itself (as root, an
// unreachable DATA_DIR moves it to /var/tmp; see src/db/embedded-postgres.ts).
fs.chmodSync(dataDir, 0o755);
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function startServer(port: number): Promise<{ child: ChildProcess; ms: number }> {
  const began = Date.now();
  const child = start("src/main.ts", [], { PORT: String(port), DATA_DIR: dataDir, BCRYPT_COST: "4" });
  while (Date.now() - began < 30_000) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, ms: Date.now() - began };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error("server did not answer /healthz within 30 s");
}

const answers = (port: number) =>
  fetch(`http://127.0.0.1:${port}/healthz`).then(
    (r) => r.ok,
    () => false,
  );

/** The ids of `pid`'s child processes, read from /proc (field 4 of a process's stat is its parent). */
function childrenOf(pid: number): number[] {
  return fs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      // After the command name in parentheses: state, then the parent's id.
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      return parent === pid ? [Number(entry)] : [];
    } catch {
      return []; // gone meanwhile
    }
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The server's connections to the embedded cluster in `pgDir`, by how they came. */
async function connectionsOf(pgDir: string): Promise<{ socket: number; tcp: number }> {
  const port = fs.readFileSync(path.join(pgDir, "postmaster.pid"), "utf8").split("\n")[3];
  const password = fs.readFileSync(`${pgDir}.password`, "utf8").trim();
  const client = new pg.Client({ host: pgDir, port: Number(port), user: "postgres", password, database: "murmur" });
  await client.connect();
  try {
    const { rows } = await client.query<{ socket: number; tcp: number }>(
      `SELECT count(*) FILTER (WHERE client_addr IS NULL)::int AS socket,
              count(*) FILTER (WHERE client_addr IS NOT NULL)::int AS tcp
       FROM pg_stat_activity WHERE datname = 'murmur' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

async function stopServer(child: ChildProcess): Promise<number | null> {
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  return code;
}

describe("npm start", () => {
  it("serves on an embedded PostgreSQL, keeps data across restarts, and stops cleanly", async () => {
    const port = await freePort();
    const first = await startServer(port);
    console.log(`cold start (PostgreSQL initdb included): ${first.ms} ms`);
    const created = await fetch(`http://127.0.0.1:${port}/accounts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "kept",
        email: "kept@example.com",
        passphrase: "correct-horse",
        captcha_token: "ok",
      }),
    });
    expect(created.status).toBe(200);
    expect(fs.existsSync(path.join(dataDir, "pg", "PG_VERSION"))).toBe(true);
    // The server reaches its PostgreSQL through the Unix socket in the cluster's folder.
    const connections = await connectionsOf(path.join(dataDir, "pg"));
    expect(connections.tcp).toBe(0);
    expect(connections.socket).toBeGreaterThan(0);
    expect(await stopServer(first.child)).toBe(0);

    const second = await startServer(port);
    console.log(`warm start: ${second.ms} ms`);
    const kept = await fetch(`http://127.0.0.1:${port}/accounts/kept`);
    expect(kept.status).toBe(200);
    // PUBLIC_URL is unset: its default follows PORT, so names and links point where it listens.
    expect(((await kept.json()) as { name: string }).name).toBe(`@kept@localhost:${port}`);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect(await stopServer(second.child)).toBe(0);
    // The embedded PostgreSQL stopped with the server.
    expect(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);
  });

  it("runs the compiled server, and stops gracefully when SIGTERM is sent to the `npm start` process itself", async () => {
    const port = await freePort();
    const { DATABASE_URL: _, ...env } = process.env;
    // npm runs the script through `sh -c`; the script execs node, so npm's signal reaches it.
    const npm = spawn("npm", ["start"], {
      cwd: ROOT,
      env: { ...env, PORT: String(port), DATA_DIR: dataDir, BCRYPT_COST: "4", LOG_LEVEL: "warn" },
      stdio: "ignore",
    });
    const began = Date.now();
    while (!(await answers(port))) {
      if (npm.exitCode !== null || Date.now() - began > 60_000) throw new Error("npm start did not serve");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ready = Date.now() - began;
    // npm's one child is the server itself (sh became node), not a shell that would not pass
    // the signal on and leave the server running as an orphan.
    const children = childrenOf(npm.pid as number);
    expect(children).toHaveLength(1);
    const [serverPid] = children;
    // It runs the compiled server: node on dist/main.js, no TypeScript loader (tsx's --import)
    // and no child but the embedded PostgreSQL and the streams' process, the same compiled server
    // (tsx's esbuild would be one more).
    const commandOf = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    expect(commandOf(serverPid)).toEqual([expect.stringMatching(/node$/), "dist/main.js"]);
    const isPostgres = (pid: number) => fs.readFileSync(`/proc/${pid}/comm`, "utf8").includes("postgres");
    const postgres = childrenOf(serverPid).find(isPostgres) as number;
    const streams = childrenOf(serverPid).find((pid) => !isPostgres(pid)) as number;
    expect(childrenOf(serverPid)).toHaveLength(2);
    expect(fs.readFileSync(`/proc/${postgres}/comm`, "utf8").trim()).toBe("postgres");
    expect(commandOf(streams)).toEqual([expect.stringMatching(/node$/), expect.stringMatching(/\/dist\/main\.js$/)]);
    // npm start limits malloc's arenas (fewer idle megabytes).
    expect(fs.readFileSync(`/proc/${serverPid}/environ`, "utf8").split("\0")).toContain("MALLOC_ARENA_MAX=2");
    // Idle after start: its resident memory, for the record.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const rssMb = (pid: number) =>
      Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024);
    console.log(
      `npm start: /healthz 200 after ${ready} ms; idle RSS ${rssMb(serverPid)} MB, its streams' process ${rssMb(streams)} MB`,
    );
    npm.kill("SIGTERM");
    const [code] = (await once(npm, "exit")) as [number | null];
    expect(code).toBe(0);
    // The server is gone, not orphaned: its process ended, its port is closed and its embedded
    // PostgreSQL stopped.
    expect(alive(serverPid)).toBe(false);
    expect(alive(streams)).toBe(false);
    expect(await answers(port)).toBe(false);
    expect(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);
  });

  it("stops with one line naming a bad setting", async () => {
    const result = await run("src/main.ts", [], { PORT: "not-a-port", DATA_DIR: dataDir });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^invalid configuration: PORT /)]);
  });

  it.each([
    [{ TOKEN_SIGNING_KEY: "garbage" }, "TOKEN_SIGNING_KEY"],
    [{ HOST: "no-such-host.invalid" }, "HOST"],
  ])("stops on %o with one line naming %s, before the database starts", async (env, variable) => {
    const untouched = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-start-bad-"));
    fs.chmodSync(untouched, 0o755);
    try {
      const result = await run("src/main.ts", [], { DATA_DIR: untouched, ...env });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(new RegExp(`^invalid configuration: ${variable} `)),
      ]);
      // No embedded PostgreSQL was made, let alone started.
      expect(fs.readdirSync(untouched)).toEqual([]);
    } finally {
      fs.rmSync(untouched, { recursive: true, force: true });
    }
  });

  it("refuses a second server on the same DATA_DIR with one line naming the folder and the owner; the CLI shares", async () => {
    const port = await freePort();
    const first = await startServer(port);
    try {
      const second = await run("src/main.ts", [], { PORT: String(await freePort()), DATA_DIR: dataDir });
      expect(second.code).toBe(1);
      expect(second.stderr.trim().split("\n")).toEqual([
        `${dataDir} is in use by another Murmur process (pid ${first.child.pid}): one server per data folder; stop it, or give this one its own DATA_DIR`,
      ]);
      // The first goes on serving from its database, and the CLI still shares its cluster.
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      const cli = await run("src/cli/main.ts", ["account", "list"], { DATA_DIR: dataDir });
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain("kept\t");
    } finally {
      expect(await stopServer(first.child)).toBe(0);
    }
    // Once it stopped, the folder is free again.
    const next = await startServer(port);
    expect(await stopServer(next.child)).toBe(0);
  }, 120_000);
});

describe("what a start says", () => {
  interface LogLine {
    level: number;
    msg: string;
  }

  /** Starts the server with `env`, runs `meanwhile` once it serves, stops it: its log lines. */
  async function logOfStart(env: Record<string, string>, meanwhile: (port: number) => Promise<void> = async () => {}) {
    const port = await freePort();
    const child = start("src/main.ts", [], {
      PORT: String(port),
      DATA_DIR: dataDir,
      BCRYPT_COST: "4",
      LOG_LEVEL: "info",
      ...env,
    });
    let stdout = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
    });
    const began = Date.now();
    // Said once it listens.
    while (!stdout.includes("/openapi.json")) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${stdout}`);
      if (Date.now() - began > 30_000) throw new Error(`server did not say where it serves: ${stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await meanwhile(port);
    expect(await stopServer(child)).toBe(0);
    const lines = stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as LogLine);
    return { port, lines };
  }

  const said = (lines: LogLine[], about: RegExp) => lines.filter((l) => about.test(l.msg));

  it("names the addresses of /docs, /graphql and /openapi.json, and warns that tokens die without TOKEN_SIGNING_KEY", async () => {
    const { port, lines } = await logOfStart({}, async (port) => {
      // Out of production, /metrics stays open without METRICS_TOKEN.
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
    });
    const base = `http://localhost:${port}`;
    expect(said(lines, /\/docs/)).toEqual([
      expect.objectContaining({
        level: 30,
        msg: `REST reference ${base}/docs, GraphQL (GraphiQL in a browser) ${base}/graphql, OpenAPI ${base}/openapi.json`,
      }),
    ]);
    expect(said(lines, /TOKEN_SIGNING_KEY/)).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(/^TOKEN_SIGNING_KEY is unset: .*dies when the server restarts .*401 INVALID_TOKEN/),
      }),
    ]);
    expect(said(lines, /METRICS_TOKEN/)).toEqual([]);
  });

  it("with NODE_ENV=production and no METRICS_TOKEN, says /metrics is off, and it is", async () => {
    const { lines } = await logOfStart(
      { NODE_ENV: "production", CAPTCHA_PROVIDER: "dev", TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") },
      async (port) => {
        const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
        expect([metrics.status, await metrics.json()]).toEqual([404, { error: "NOT_FOUND" }]);
      },
    );
    expect(said(lines, /METRICS_TOKEN/)).toEqual([
      expect.objectContaining({
        level: 40,
        msg: "GET /metrics answers 404: NODE_ENV=production and METRICS_TOKEN is unset (set it to scrape /metrics)",
      }),
    ]);
    // The key is set: no word about it.
    expect(said(lines, /TOKEN_SIGNING_KEY/)).toEqual([]);
  });

  it("stops with one line naming a port in use, and stops its embedded PostgreSQL", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as net.AddressInfo;
    try {
      const result = await run("src/main.ts", [], { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split("\n")).toEqual([
        `port ${port} on 127.0.0.1 is in use by another process: stop it, or set PORT to a free port`,
      ]);
      expect(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);
    } finally {
      holder.close();
    }
  });
});

describe("npm run worker", () => {
  it("waits for an unreachable Meilisearch, one line an attempt, and stops on SIGTERM", async () => {
    const closed = await freePort(); // nothing listens there
    const untouched = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-worker-"));
    try {
      const child = start("src/search/worker-main.ts", [], {
        DATA_DIR: untouched,
        MEILI_URL: `http://127.0.0.1:${closed}`,
        LOG_LEVEL: "info",
      });
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (chunk) => {
        stdout += chunk;
      });
      child.stderr?.on("data", (chunk) => {
        stderr += chunk;
      });
      const began = Date.now();
      // Attempts at 0, 1 and 3 s.
      while (stdout.split("\n").filter((line) => line.includes("not ready")).length < 3) {
        if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode}: ${stderr}`);
        if (Date.now() - began > 15_000) throw new Error(`worker did not retry: ${stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const attempts = stdout.split("\n").filter((line) => line.includes("not ready"));
      attempts.forEach((line, i) => {
        const { msg } = JSON.parse(line) as { msg: string };
        expect(msg).toMatch(
          new RegExp(
            `^Meilisearch at http://127\\.0\\.0\\.1:${closed} not ready \\(attempt ${i + 1}\\): .*ECONNREFUSED.*; trying again in \\d+ s$`,
          ),
        );
      });
      expect(stderr).toBe("");
      child.kill("SIGTERM");
      const [code] = (await once(child, "exit")) as [number | null];
      expect(code).toBe(0);
      // It waited before starting anything: no database was made.
      expect(fs.readdirSync(untouched)).toEqual([]);
    } finally {
      fs.rmSync(untouched, { recursive: true, force: true });
    }
  });
});
