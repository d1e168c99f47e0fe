// Federation at scale (docs/federation.md#delivery), on one Murmur server of its own host and
// database (127.0.0.2, FEDERATION_ALLOW_PRIVATE) and the remote servers bench/federation-sim.ts
// plays in one process of its own, each a loopback address of its own, verifying every signature:
// - fanout: one note by a local account with 10,000 remote followers on 500 servers (rows
//   written straight into the database, 20 accounts a server sharing its inbox), so 500
//   deliveries: the time from the POST to the last one, the server's CPU and memory meanwhile,
//   and the home timeline's req/s meanwhile against without. Two notes: the first opens the
//   connections (and has the simulator fetch the author's key), the second is the steady state.
// - intake: signed Create(Note)s from 100 servers (each author followed by a local account, so
//   each note is stored) POSTed to the shared inbox on 32 connections: notes stored per second
//   (counted in the database, not the 202s) and the POSTs' p99.
// - dead: a server refusing connections with 10,000 deliveries queued for it (accounts with
//   no shared inbox, so one delivery each; the notes of 20 accounts, 500 followers each): the
//   server's CPU over 30 s with them held (the circuit open) and without.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import pg from "pg";
import { seed } from "../src/cli/seed.ts";
import { remoteKeyOf } from "../src/domain/accounts/rules.ts";
import { closeServices } from "../src/services.ts";
import { cpuMicros, type Load, load, postgresCpuMicros } from "./load.ts";
import { type BenchServer, benchAccount, benchServices, startBenchServer } from "./server.ts";
import { pgStatements } from "./sql.ts";

export const SCALE_BENCHES = ["fanout", "intake", "dead"] as const;
export type ScaleBench = (typeof SCALE_BENCHES)[number];

export interface FanoutNote {
  /** From the POST to the last delivery's arrival. */
  seconds: number;
  deliveries: number;
  inboxes: number;
  verified: number;
  /** The server's CPU over those seconds, in % of one core. */
  cpuPercent: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  /** The home timeline's req/s while the deliveries ran (runs of 2 s, from the POST on). */
  timelineReqPerSec: number;
}

export interface ScaleFigures {
  fanout?: {
    servers: number;
    followers: number;
    timelineQuietReqPerSec: number;
    first: FanoutNote;
    second: FanoutNote;
  };
  intake?: {
    servers: number;
    activities: number;
    stored: number;
    /** Notes stored per second, from the first POST to the last note stored. */
    perSecond: number;
    /** POSTs answered per second. */
    answeredPerSecond: number;
    statuses: Record<string, number>;
    p50: number;
    p99: number;
    /**
     * CPU per stored activity, in ms, from the first POST to the last note stored: the server's,
     * PostgreSQL's (all its processes), the bench's counting of notes among them (its backend), the
     * simulator's POSTs and the bench process's own. CPU moves less than stored/s with the load.
     */
    cpuMsPerActivity?: { server: number; postgres: number; counting: number; simulator: number; bench: number };
    /** While the POSTs came: notes stored by their end, and the server's and PostgreSQL's CPU in % of a core. */
    whilePosted?: { stored: number; server: number; postgres: number };
  };
  dead?: {
    /** Deliveries to the dead server. */
    queued: number;
    /** Local accounts whose notes they are (each followed by a share of the dead server's accounts). */
    authors: number;
    /** The length of each CPU measure. */
    seconds: number;
    /** CPU in % of one core, of the server and of PostgreSQL's processes (the queue's work is mostly statements), before the notes. */
    without: { server: number; postgres: number };
    /** From the first note's POST until all its deliveries were in the queue. */
    queuedSeconds: number;
    /** Right after: while they are tried, each once, and held for the open circuit; the queue before and after. */
    trying: DeadWindow;
    /** From the first POST until each was tried and held; null when not within BENCH_DEAD_SETTLE_SECONDS. */
    settledSeconds: number | null;
    /** Then, all held (or as far as they got). */
    held: DeadWindow;
  };
  /** When it ran, and the machine's load average (1 min) as it began: other work shares the cores. */
  date: string;
  loadAverage: number;
  /** The simulator's key fetches and signature checks over the whole run. */
  simulator: { posts: number; verified: number; failed: number; keyFetches: number };
}

const FEDERATING = {
  FEDERATION: "true",
  FEDERATION_ALLOW_PRIVATE: "true",
  // What one instance takes in is measured, not the limits per sending server (their highest).
  FEDERATION_INBOX_RATE: "10000000",
  FEDERATION_INBOX_FETCH_RATE: "1000000",
};

const size = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** The address of the simulator's server `index`, as bench/federation-sim.ts numbers them. */
function simAddress(index: number): string {
  return `127.0.${1 + Math.floor(index / 250)}.${1 + (index % 250)}`;
}

/** An address of no server: connections to it are refused. */
const DEAD_ADDRESS = "127.0.99.1";

interface Simulator {
  port: number;
  pid: number;
  get<T>(pathAndQuery: string): Promise<T>;
  post<T>(pathname: string, body: unknown): Promise<T>;
  stop(): Promise<void>;
}

async function startSimulator(servers: number, keys: number): Promise<Simulator> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "federation-sim.ts"), String(servers), String(keys)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines = readline.createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", () => reject(new Error("the federation simulator did not start")));
  });
  const { port, control } = JSON.parse(first) as { port: number; control: number };
  const base = `http://127.0.0.1:${control}`;
  const answer = async (response: Response) => {
    if (!response.ok) throw new Error(`simulator: ${response.status} ${await response.text()}`);
    return response.json();
  };
  return {
    port,
    pid: child.pid ?? 0,
    get: async (pathAndQuery) => answer(await fetch(`${base}${pathAndQuery}`)),
    post: async (pathname, body) =>
      answer(await fetch(`${base}${pathname}`, { method: "POST", body: JSON.stringify(body) })),
    async stop() {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

interface RemoteRow {
  name: string;
  host: string;
  uri: string;
  inbox: string;
  sharedInbox: string | null;
  followers: string | null;
}

/** Remote accounts written as rows (as a resolved actor is stored, fetched just now), following `followee` or followed by it. */
async function insertRemotes(
  db: pg.Client,
  nextId: () => bigint,
  rows: RemoteRow[],
  follow: { followee: bigint } | { follower: bigint },
): Promise<bigint[]> {
  const ids = rows.map(() => nextId());
  await db.query(
    `INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, host, uri, inbox_url,
                           shared_inbox_url, followers_url, fetched_at)
     SELECT r.id, r.name, r.name_key, 'remote-' || r.id || '@remote.invalid', 'remote-' || r.id || '@remote.invalid',
            r.name, '', r.host, r.uri, r.inbox, r.shared, r.followers, now()
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       AS r(id, name, name_key, host, uri, inbox, shared, followers)`,
    [
      ids.map(String),
      rows.map((r) => r.name),
      rows.map((r) => remoteKeyOf(r.name, r.host)),
      rows.map((r) => r.host),
      rows.map((r) => r.uri),
      rows.map((r) => r.inbox),
      rows.map((r) => r.sharedInbox),
      rows.map((r) => r.followers),
    ],
  );
  if ("followee" in follow) {
    await db.query("INSERT INTO follows (follower_id, followee_id) SELECT unnest($1::bigint[]), $2", [
      ids.map(String),
      String(follow.followee),
    ]);
  } else {
    await db.query("INSERT INTO follows (follower_id, followee_id) SELECT $2, unnest($1::bigint[])", [
      ids.map(String),
      String(follow.follower),
    ]);
  }
  return ids;
}

async function postNote(url: string, token: string, content: string): Promise<{ id: string; postedAt: number }> {
  const postedAt = Date.now();
  const response = await fetch(`${url}/notes`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  if (response.status !== 201 && response.status !== 200) throw new Error(`POST /notes: ${response.status}`);
  return { id: ((await response.json()) as { id: string }).id, postedAt };
}

function rssMb(pid: number): number {
  try {
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024);
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ActivityStats {
  posts: number;
  verified: number;
  failed: number;
  inboxes: number;
  first?: number;
  last?: number;
}

/** One note of the author to its remote followers, and what the server and its timeline did meanwhile. */
async function fanoutNote(
  server: BenchServer,
  sim: Simulator,
  servers: number,
  timeline: () => Promise<Load & { seconds: number }>,
  tag: string,
): Promise<FanoutNote> {
  const rssBefore = rssMb(server.pid);
  let rssPeak = rssBefore;
  const cpuBefore = cpuMicros(server.pid);
  const { id, postedAt } = await postNote(server.url, server.token, `fan-out ${tag} ${Date.now()}`);
  const activity = `${server.url}/notes/${id}#create`;
  let done = false;
  let stats: ActivityStats = { posts: 0, verified: 0, failed: 0, inboxes: 0 };
  let cpuAfter = Number.NaN;
  const deadline = Date.now() + 300_000;
  const watching = (async () => {
    while (stats.inboxes < servers && Date.now() < deadline) {
      await sleep(50);
      rssPeak = Math.max(rssPeak, rssMb(server.pid));
      stats = await sim.get<ActivityStats>(`/stats?activity=${encodeURIComponent(activity)}`);
    }
    cpuAfter = cpuMicros(server.pid);
    done = true;
  })();
  const runs: (Load & { seconds: number })[] = [];
  while (!done) runs.push(await timeline());
  await watching;
  if (stats.inboxes < servers) throw new Error(`fan-out: ${stats.inboxes} of ${servers} inboxes in 300 s`);
  const seconds = ((stats.last ?? Date.now()) - postedAt) / 1000;
  // Runs are weighed by their length: the requests made over the time they took.
  const requests = runs.reduce((sum, r) => sum + r.reqPerSec * r.seconds, 0);
  const runSeconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  return {
    seconds: Math.round(seconds * 10) / 10,
    deliveries: stats.posts,
    inboxes: stats.inboxes,
    verified: stats.verified,
    cpuPercent: Math.round((cpuAfter - cpuBefore) / 10_000 / seconds),
    rssBeforeMb: rssBefore,
    rssPeakMb: rssPeak,
    timelineReqPerSec: Math.round(requests / Math.max(runSeconds, 1e-9)),
  };
}

/** CPU of the PostgreSQL instance `db` is on, in µs (bench/load.ts postgresCpuMicros). */
async function postgresCpuOf(db: pg.Client): Promise<number> {
  return postgresCpuMicros((await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0].pid);
}

/** The CPU of the server and of its PostgreSQL's processes over `seconds`, each in % of one core. */
async function cpuOver(db: pg.Client, pid: number, seconds: number): Promise<{ server: number; postgres: number }> {
  const before = { server: cpuMicros(pid), postgres: await postgresCpuOf(db) };
  const started = performance.now();
  await sleep(seconds * 1000);
  const elapsed = (performance.now() - started) / 1000;
  const percent = (micros: number) => Math.round((micros / 1e6 / elapsed) * 1000) / 10;
  return {
    server: percent(cpuMicros(pid) - before.server),
    postgres: percent((await postgresCpuOf(db)) - before.postgres),
  };
}

interface DeadWindow {
  before: QueueState;
  cpu: { server: number; postgres: number };
  after: QueueState;
}

interface QueueState {
  /**
   * Deliveries held for the open circuit (waiting out its pause): queued again by Fedify, or moved
   * as one with the first of them (GuardedQueue in src/federation/delivery.ts) before being tried.
   */
  held: number;
  /** Due now, or being handled. */
  due: number;
  /** Waiting for a retry, or behind an earlier message of their ordering key. */
  waiting: number;
}

/** The queue's messages, those for inboxes under `paused` (an origin) waiting counted as held. */
async function queueState(db: pg.Client, paused: string): Promise<QueueState> {
  const { rows } = await db.query<QueueState>(
    `SELECT count(*) FILTER (WHERE held)::int AS held,
            count(*) FILTER (WHERE NOT held AND (run_at <= now() OR claimed_by IS NOT NULL))::int AS due,
            count(*) FILTER (WHERE NOT held AND run_at > now() AND claimed_by IS NULL)::int AS waiting
     FROM (SELECT *, message ? 'circuitHeld'
                     OR (starts_with(message->>'inbox', $1) AND run_at > now() + interval '1 minute' AND claimed_by IS NULL) AS held
           FROM federation_messages) AS m`,
    [`${paused}/`],
  );
  return rows[0];
}

/** Waits until no message of the federation queue is due or being handled (all done, or waiting for later). */
async function queueSettled(db: pg.Client, atLeast: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let quiet = 0;
  for (;;) {
    const { rows } = await db.query<{ queued: number; due: number }>(
      "SELECT count(*)::int AS queued, count(*) FILTER (WHERE run_at <= now() OR claimed_by IS NOT NULL)::int AS due FROM federation_messages",
    );
    quiet = rows[0].queued >= atLeast && rows[0].due === 0 ? quiet + 1 : 0;
    if (quiet >= 4) return rows[0].queued;
    if (Date.now() > deadline) {
      const kinds = await db.query(
        `SELECT queue, message->>'type' AS type, message ? 'circuitHeld' AS held, attempts, run_at <= now() AS due,
                count(*)::int AS n, min(created_at) AS oldest, max(created_at) AS newest
         FROM federation_messages GROUP BY 1, 2, 3, 4, 5 ORDER BY n DESC LIMIT 20`,
      );
      console.table(kinds.rows);
      throw new Error(`federation queue: ${JSON.stringify(rows[0])} after ${ms} ms`);
    }
    await sleep(250);
  }
}

export async function benchFederationScale(names: readonly ScaleBench[]): Promise<ScaleFigures> {
  const fanoutServers = size("BENCH_FANOUT_SERVERS", 500);
  const fanoutFollowers = size("BENCH_FANOUT_FOLLOWERS", 10_000);
  const intakeServers = size("BENCH_INTAKE_SERVERS", 100);
  const intakeActivities = size("BENCH_INTAKE", 3_000);
  const deadQueued = size("BENCH_DEAD", 10_000);
  const deadSeconds = size("BENCH_DEAD_SECONDS", 30);
  const server = await startBenchServer({ host: "127.0.0.2", name: "fanner", env: FEDERATING });
  const services = await benchServices(server);
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  const sim = await startSimulator(
    Math.max(names.includes("fanout") ? fanoutServers : 0, names.includes("intake") ? intakeServers : 0, 1),
    names.includes("intake") ? intakeServers : 0,
  );
  const figures: ScaleFigures = {
    date: new Date().toISOString(),
    loadAverage: Math.round(os.loadavg()[0] * 100) / 100,
    simulator: { posts: 0, verified: 0, failed: 0, keyFetches: 0 },
  };
  const nextId = () => services.ids.next();
  try {
    if (names.includes("fanout")) {
      // The timeline measured meanwhile: viewer's home (following 5,000 of 10,000 seeded accounts).
      const seeded = await seed(services, server.databaseUrl, {
        accounts: 10_000,
        notes: 20_000,
        passphrase: "seed-passphrase",
        force: true,
      });
      const token = (await services.tokens.sign(seeded.viewerId, "access")).token;
      const timeline = async () => {
        const started = performance.now();
        const run = await load(`${server.url}/timeline/home`, { token, duration: 2 });
        return { ...run, seconds: (performance.now() - started) / 1000 };
      };
      const rows: RemoteRow[] = Array.from({ length: fanoutFollowers }, (_, i) => {
        const origin = `http://${simAddress(i % fanoutServers)}:${sim.port}`;
        const name = `f${Math.floor(i / fanoutServers)}`;
        return {
          name,
          host: new URL(origin).host,
          uri: `${origin}/users/${name}`,
          inbox: `${origin}/users/${name}/inbox`,
          sharedInbox: `${origin}/inbox`,
          followers: `${origin}/users/${name}/followers`,
        };
      });
      await insertRemotes(db, nextId, rows, { followee: server.accountId });
      await db.query("VACUUM (ANALYZE)");
      await load(`${server.url}/timeline/home`, { token, duration: 2 });
      const quiet = [await timeline(), await timeline(), await timeline()];
      const first = await fanoutNote(server, sim, fanoutServers, timeline, "first");
      await queueSettled(db, 0, 120_000);
      const second = await fanoutNote(server, sim, fanoutServers, timeline, "second");
      await queueSettled(db, 0, 120_000);
      figures.fanout = {
        servers: fanoutServers,
        followers: fanoutFollowers,
        timelineQuietReqPerSec: Math.round(
          quiet.reduce((sum, r) => sum + r.reqPerSec * r.seconds, 0) / quiet.reduce((sum, r) => sum + r.seconds, 0),
        ),
        first,
        second,
      };
    }
    if (names.includes("intake")) {
      const rows: RemoteRow[] = Array.from({ length: intakeServers }, (_, i) => {
        const origin = `http://${simAddress(i)}:${sim.port}`;
        return {
          name: "author",
          host: new URL(origin).host,
          uri: `${origin}/users/author`,
          inbox: `${origin}/users/author/inbox`,
          sharedInbox: `${origin}/inbox`,
          followers: `${origin}/users/author/followers`,
        };
      });
      const authors = await insertRemotes(db, nextId, rows, { follower: server.accountId });
      const storedNotes = async () =>
        (
          await db.query<{ n: number }>("SELECT count(*)::int AS n FROM notes WHERE author_id = ANY($1::bigint[])", [
            authors.map(String),
          ])
        ).rows[0].n;
      /**
       * Waits for `target` notes stored; the time the last was seen (ms since the epoch), or of the
       * last progress. Counted every 100 ms until the last twentieth, then every 20 ms: the count
       * takes PostgreSQL's CPU from the run it measures (~1 ms a count after the fan-out, 50 a
       * second), and only the last one's time is a figure.
       */
      const storedBy = async (target: number): Promise<{ stored: number; at: number }> => {
        let last = { stored: await storedNotes(), at: Date.now() };
        const start = last.stored;
        while (last.stored < target && Date.now() - last.at < 60_000) {
          await sleep(last.stored - start < (target - start) * 0.95 ? 100 : 20);
          const stored = await storedNotes();
          if (stored > last.stored) last = { stored, at: Date.now() };
        }
        return last;
      };
      const inbox = `${server.url}/inbox`;
      // Each server's key fetched once and its connections open before the measured run.
      await sim.post("/sign", { inbox, count: intakeServers, tag: "warm" });
      await sim.post("/intake", { connections: 32 });
      const warmed = await storedBy(intakeServers);
      await sim.post("/sign", { inbox, count: intakeActivities, tag: "run" });
      const counter = (await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      const cpuNow = () => ({
        server: cpuMicros(server.pid),
        postgres: postgresCpuMicros(counter),
        counting: cpuMicros(counter),
        simulator: cpuMicros(sim.pid),
        bench: process.cpuUsage().user + process.cpuUsage().system,
        at: performance.now(),
      });
      // The statements of the measured run, by PostgreSQL's time in them (bench/sql.ts).
      if (pgStatements.wanted) await pgStatements.reset(db);
      const cpuStart = cpuNow();
      const measured = storedBy(warmed.stored + intakeActivities);
      const posted = await sim.post<{
        startedAt: number;
        endedAt: number;
        statuses: Record<string, number>;
        p50: number;
        p99: number;
      }>("/intake", { connections: 32 });
      const cpuPosted = cpuNow();
      const storedPosted = (await storedNotes()) - warmed.stored;
      const done = await measured;
      const cpuDone = cpuNow();
      const stored = done.stored - warmed.stored;
      if (pgStatements.wanted) await pgStatements.print(db);
      const perActivity = (key: Exclude<keyof ReturnType<typeof cpuNow>, "at">) =>
        Math.round((cpuDone[key] - cpuStart[key]) / 10 / stored) / 100;
      const percent = (key: "server" | "postgres") =>
        Math.round(((cpuPosted[key] - cpuStart[key]) / 10 / (cpuPosted.at - cpuStart.at)) * 1) / 1;
      figures.intake = {
        servers: intakeServers,
        activities: intakeActivities,
        stored,
        perSecond: Math.round(stored / ((done.at - posted.startedAt) / 1000)),
        answeredPerSecond: Math.round(intakeActivities / ((posted.endedAt - posted.startedAt) / 1000)),
        statuses: posted.statuses,
        p50: posted.p50,
        p99: posted.p99,
        cpuMsPerActivity: {
          server: perActivity("server"),
          postgres: perActivity("postgres"),
          counting: perActivity("counting"),
          simulator: perActivity("simulator"),
          bench: perActivity("bench"),
        },
        whilePosted: { stored: storedPosted, server: percent("server"), postgres: percent("postgres") },
      };
      await queueSettled(db, 0, 120_000);
    }
    if (names.includes("dead")) {
      // Several authors, each with a share of the dead server's accounts as followers: one note's
      // fan-out to 10,000 inboxes outlasts the queue's handler timeout and is queued again while
      // it runs (BENCH_DEAD_AUTHORS=1 shows it: bench/README.md).
      const deadAuthors = size("BENCH_DEAD_AUTHORS", 20);
      const origin = `http://${DEAD_ADDRESS}:${sim.port}`;
      const authors: { token: string }[] = [];
      for (let a = 0; a < deadAuthors; a++) {
        const author = await benchAccount(server.url, `deadfanner${a}`);
        authors.push(author);
        const share = Math.floor(deadQueued / deadAuthors) + (a < deadQueued % deadAuthors ? 1 : 0);
        const rows: RemoteRow[] = Array.from({ length: share }, (_, i) => ({
          name: `d${a}-${i}`,
          host: new URL(origin).host,
          uri: `${origin}/users/d${a}-${i}`,
          inbox: `${origin}/users/d${a}-${i}/inbox`,
          sharedInbox: null,
          followers: null,
        }));
        await insertRemotes(db, nextId, rows, { followee: author.accountId });
      }
      await queueSettled(db, 0, 120_000);
      const without = await cpuOver(db, server.pid, deadSeconds);
      const started = Date.now();
      for (const author of authors) await postNote(server.url, author.token, `to a dead server ${Date.now()}`);
      // Every delivery queued (the fan-outs done); then each is tried once and held while the
      // circuit is open, within BENCH_DEAD_SETTLE_SECONDS (else measured as far as it got).
      const settleBy = Date.now() + size("BENCH_DEAD_SETTLE_SECONDS", 900) * 1000;
      let state = await queueState(db, origin);
      while (state.held + state.due + state.waiting < deadQueued && Date.now() < settleBy) {
        await sleep(250);
        state = await queueState(db, origin);
      }
      const queuedSeconds = Math.round((Date.now() - started) / 100) / 10;
      // While they are tried (each once, then held for the open circuit), and once all are held.
      const trying = {
        before: state,
        cpu: await cpuOver(db, server.pid, deadSeconds),
        after: await queueState(db, origin),
      };
      state = trying.after;
      while (state.due + state.waiting > 0 && Date.now() < settleBy) {
        await sleep(1000);
        state = await queueState(db, origin);
      }
      const settledSeconds = state.due + state.waiting === 0 ? Math.round((Date.now() - started) / 100) / 10 : null;
      const held = {
        before: state,
        cpu: await cpuOver(db, server.pid, deadSeconds),
        after: await queueState(db, origin),
      };
      figures.dead = {
        queued: deadQueued,
        authors: deadAuthors,
        seconds: deadSeconds,
        without,
        queuedSeconds,
        trying,
        settledSeconds,
        held,
      };
    }
    figures.simulator = await sim.get("/totals");
    return figures;
  } finally {
    await sim.stop();
    await db.end();
    await closeServices(services);
    await server.stop();
  }
}

export function printFederationScale(figures: ScaleFigures, before?: ScaleFigures): void {
  const { fanout, intake, dead, simulator } = figures;
  console.log(
    `\nFederation at scale (bench/federation-scale.ts; remote servers simulated, every signature verified; load average ${figures.loadAverage} at the start):`,
  );
  const rows: Record<string, Record<string, string | number>> = {};
  if (fanout) {
    for (const which of ["first", "second"] as const) {
      const note = fanout[which];
      const ratio = note.timelineReqPerSec / fanout.timelineQuietReqPerSec;
      rows[`fan-out, ${which} note: ${fanout.followers.toLocaleString("en")} followers on ${fanout.servers} servers`] =
        {
          measured: `${note.inboxes} inboxes (${note.deliveries} POSTs, ${note.verified} verified) in ${note.seconds} s; server CPU ${note.cpuPercent}% of a core, RSS ${note.rssBeforeMb} -> peak ${note.rssPeakMb} MB; home timeline ${note.timelineReqPerSec} req/s (${ratio.toFixed(2)}x of ${fanout.timelineQuietReqPerSec} quiet)`,
          goal: `${fanout.servers} delivered < 60 s; timeline >= 0.7x`,
          before: before?.fanout
            ? `${before.fanout[which].seconds} s, ${before.fanout[which].timelineReqPerSec} req/s`
            : "",
        };
    }
  }
  if (intake) {
    rows[`intake: signed Create(Note)s from ${intake.servers} servers, 32 connections`] = {
      measured: `${intake.perSecond} stored/s (${intake.stored} of ${intake.activities}; answered ${intake.answeredPerSecond}/s, ${JSON.stringify(intake.statuses)}); p50 ${intake.p50} ms, p99 ${intake.p99} ms`,
      goal: ">= 300/s, p99 < 200 ms",
      before: before?.intake ? `${before.intake.perSecond}/s, p99 ${before.intake.p99} ms` : "",
    };
  }
  if (dead) {
    const state = (q: QueueState) => `${q.held} held, ${q.due} due, ${q.waiting} waiting`;
    const window = (w: DeadWindow) =>
      `server ${w.cpu.server}%, PostgreSQL ${w.cpu.postgres}% of a core (queue ${state(w.before)} -> ${state(w.after)})`;
    const name = `a dead server, ${dead.queued.toLocaleString("en")} deliveries (notes of ${dead.authors} accounts), CPU over ${dead.seconds} s`;
    rows[`${name}: while tried`] = {
      measured: `${window(dead.trying)}; all queued ${dead.queuedSeconds} s after the POSTs`,
      goal: "< 1%",
      before: before?.dead ? `${before.dead.trying.cpu.server}%, ${before.dead.trying.cpu.postgres}%` : "",
    };
    rows[`${name}: all held`] = {
      measured: `${window(dead.held)}; ${dead.settledSeconds === null ? "NOT all held" : `all held ${dead.settledSeconds} s after the POSTs`}; before them server ${dead.without.server}%, PostgreSQL ${dead.without.postgres}%`,
      goal: "< 1%",
      before: before?.dead ? `${before.dead.held.cpu.server}%, ${before.dead.held.cpu.postgres}%` : "",
    };
  }
  console.table(rows);
  const cpu = intake?.cpuMsPerActivity;
  if (cpu && intake.whilePosted) {
    console.log(
      `Intake, CPU per stored activity: server ${cpu.server} ms, PostgreSQL ${cpu.postgres} ms (the bench's counting ${cpu.counting} ms), simulator ${cpu.simulator} ms, bench ${cpu.bench} ms; while the POSTs came: ${intake.whilePosted.stored} stored, server ${intake.whilePosted.server}%, PostgreSQL ${intake.whilePosted.postgres}% of a core`,
    );
  }
  console.log(
    `Simulator: ${simulator.posts} POSTs, ${simulator.verified} verified, ${simulator.failed} failed; ${simulator.keyFetches} keys fetched`,
  );
}
