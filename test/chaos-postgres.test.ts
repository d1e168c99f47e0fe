// Faults (docs/faults.md#database): the server's embedded PostgreSQL killed with SIGKILL under it.
// The server starts it again by itself and serves again (a note can be written, the ones before are
// there, SIGTERM still stops it cleanly), with and without WORKER_ID; one that cannot be started
// again ends the process at once with code 1 and one line, not when the worker id's lease runs out.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import { freePort } from "./support/net.ts";
import { start } from "./support/process.ts";
import { call as remote } from "./support/remote.ts";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-chaos-pg-"));
fs.chmodSync(dataDir, 0o755);
const servers: ChildProcess[] = [];
afterAll(async () => {
  for (const child of servers) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Server {
  child: ChildProcess;
  base: string;
  /** Its log lines so far (JSON, LOG_LEVEL=info). */
  lines(): { level: number; msg: string; reqId?: string; process?: string }[];
  /** What it wrote to standard error so far (a crash's stack, not a log line). */
  errors(): string;
  exited: Promise<number | null>;
}

async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const port = await freePort();
  const child = start("src/main.ts", [], {
    PORT: String(port),
    DATA_DIR: dataDir,
    BCRYPT_COST: "4",
    RATE_LIMIT_MULTIPLIER: "0",
    LOG_LEVEL: "info",
    ...env,
  });
  servers.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  let errors = "";
  child.stderr?.on("data", (chunk) => {
    errors += chunk;
  });
  // "close", not "exit": after its output is read whole (at "exit" the last lines may still be
  // in the pipe, and a loaded machine read the fatal line after the test had looked).
  const exited = once(child, "close").then(([code]) => code as number | null);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the server did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const lines = () =>
    output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
  return { child, base, lines, errors: () => errors, exited };
}

// Never a hang: an answer that does not come within 10 s fails the test.
const call = (server: Server, method: string, url: string, body?: unknown, token?: string) =>
  remote({ url: server.base }, method, url, body, token);

const credentials = { name: "phoenix", passphrase: "phoenix-passphrase", captcha_token: "ok" };

/** The account's token; the account is made (and its email verified) on the first call. */
async function login(server: Server): Promise<string> {
  let answer = await call(server, "POST", "/login", credentials);
  if (answer.status !== 200) {
    expect((await call(server, "POST", "/accounts", { ...credentials, email: "phoenix@example.com" })).status).toBe(
      200,
    );
    const outbox = path.join(dataDir, "outbox");
    // The mail is written just after the answer, beside it as `.partial` until it is whole.
    const mails = () => (fs.existsSync(outbox) ? fs.readdirSync(outbox).filter((name) => name.endsWith(".eml")) : []);
    const deadline = Date.now() + 10_000;
    while (mails().length === 0) {
      if (Date.now() > deadline) throw new Error("no mail in the outbox");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const mail = fs.readFileSync(path.join(outbox, mails()[0]), "utf8");
    const token = /^Verification token: (\S+)$/m.exec(mail)?.[1];
    await call(server, "POST", `/accounts/${credentials.name}/verify_email`, { token });
    answer = await call(server, "POST", "/login", credentials);
  }
  expect(answer.status).toBe(200);
  return answer.body.authorization_token;
}

/** SIGKILL to the postmaster, as the OOM killer or an operator's `kill -9` would. */
function killPostgres(): void {
  const pid = Number(fs.readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
  process.kill(pid, "SIGKILL");
}

async function stopServer(server: Server): Promise<number | null> {
  server.child.kill("SIGTERM");
  return server.exited;
}

describe.each([
  ["without WORKER_ID (a leased worker id)", {}],
  ["with WORKER_ID", { WORKER_ID: "7" }],
])("the embedded PostgreSQL killed, %s", (_name, env: Record<string, string>) => {
  it("is started again by the server, which serves again by itself", async () => {
    const server = await startServer(env);
    onTestFailed(() => {
      server.child.kill("SIGKILL");
    });
    const token = await login(server);
    const before = await call(server, "POST", "/notes", { content: "before the kill" }, token);
    expect(before.status).toBe(201);

    killPostgres();
    // Bounded: the restart's backoff is some 12 s at most.
    const deadline = Date.now() + 30_000;
    let after = { status: 0, body: undefined as { id: string } | undefined };
    while (after.status !== 201 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await call(server, "POST", "/notes", { content: "after the kill" }, token);
      // Meanwhile: the documented 503, never another answer, and the process stays.
      expect([201, 503]).toContain(after.status);
      expect(server.child.exitCode).toBeNull();
    }
    expect(after.status).toBe(201);
    expect((await call(server, "GET", "/readyz")).status).toBe(200);
    expect((await call(server, "GET", `/notes/${before.body.id}`, undefined, token)).status).toBe(200);
    expect((await call(server, "GET", `/notes/${after.body?.id}`, undefined, token)).status).toBe(200);

    const background = server.lines().filter((line) => line.reqId === undefined);
    const said = background.map((line) => line.msg).filter((msg) => msg.startsWith("the embedded PostgreSQL"));
    expect(said).toEqual([
      "the embedded PostgreSQL stopped (killed by SIGKILL): starting it again; requests get 503 meanwhile",
      expect.stringMatching(/^the embedded PostgreSQL serves again \(attempt \d\)$/),
    ]);
    // The retrying jobs (listeners, the lease, deletions) say their failure once each, not every
    // second: once in the server and once in its streams' process, whose lines say so.
    const failures = background.filter((line) => line.level >= 40).map((line) => `${line.process} ${line.msg}`);
    expect(new Set(failures).size).toBe(failures.length);
    // The PostgreSQL started again is the one the server stops: a clean shutdown, code 0.
    expect(await stopServer(server)).toBe(0);
    expect(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);
  }, 120_000);
});

describe("an embedded PostgreSQL that cannot be started again", () => {
  it("ends the server at once with code 1 and one line", async () => {
    const server = await startServer();
    // The running PostgreSQL has read it; a new one refuses the folder without it.
    const version = path.join(dataDir, "pg", "PG_VERSION");
    fs.renameSync(version, `${version}.away`);
    try {
      killPostgres();
      const deadline = Date.now() + 30_000;
      const code = await Promise.race([
        server.exited,
        new Promise<string>((resolve) => setTimeout(() => resolve("still running"), deadline - Date.now())),
      ]);
      expect(code).toBe(1);
    } finally {
      fs.renameSync(`${version}.away`, version);
    }
    const fatal = server.lines().filter((line) => line.level >= 60);
    // Once in CI the server ended with code 1 and no fatal line: what it wrote besides, to tell why.
    const besides = `standard error: ${server.errors() || "(nothing)"}; last lines: ${JSON.stringify(server.lines().slice(-5))}`;
    expect(
      fatal.map((line) => line.msg),
      besides,
    ).toEqual([
      expect.stringMatching(
        /^the embedded PostgreSQL could not be started again \(6 attempts to start it again failed, the last: FATAL: .* is not a valid data directory\): exiting$/,
      ),
    ]);
  }, 120_000);
});
