// Live updates under load (docs/live.md#fan-out): 2,000 Server-Sent Events streams on one instance,
// the home and global streams of 1,000 followers of one author, while that author posts 50 notes/s.
// Delivery latency is from each POST's answer to a timed stream's receipt of that note (one
// stream in ten, read as its bytes land; the rest read in turns, every note counted); the server's
// RSS is read before and after the streams open (idle); the global timeline's throughput is
// measured meanwhile, beside the same measure with no stream open.
import net from "node:net";
import type { Services } from "../src/domain/context.ts";
import { cpuMicros, load, medianOf, medianRun, postgresCpuMicros } from "./load.ts";

const FOLLOWERS = 1_000;
const NOTES_PER_SECOND = 50;
const SECONDS = 10;
/** Runs of the global timeline beside the deliveries, and alone, taken in turns. */
const TURNS = 3;
const UNLOADED_SECONDS = 5;
/** Far from the seeded accounts and the hostile crowd. */
const FIRST = 5_000_000_000n;

export interface LiveFigures {
  streams: number;
  notesPerSecond: number;
  /** Notes received by every stream, counted; `expected` is the notes posted times the streams. */
  delivered: number;
  expected: number;
  /** The streams whose notes were stamped at their receipt (TIMED_EVERY), and their receipts. */
  timedStreams: number;
  timedDeliveries: number;
  latencyP50: number;
  latencyP99: number;
  /** RSS of a server holding the idle streams beside one that opened and closed as many. */
  rssPerIdleStreamKb: number;
  /** The same beside one that opened none (the figure of the runs before 2026-11-26, noon). */
  rssPerOpeningKb: number;
  /** The medians of TURNS runs each, in turns (`turns`: each run's req/s). */
  globalTimeline: {
    quiet: number;
    withStreams: number;
    turns?: { quiet: number[]; withStreams: number[] };
    /** The server's event-loop delay p99 (ms) in each, medians of the turns. */
    loopDelayP99?: { quiet: number; withStreams: number };
    /** Alone before the author posted anything (the figure `quiet` was until 2026-11-27, evening). */
    before?: number;
  };
  /**
   * The same deliveries with no other load first: the server's CPU meanwhile (% of one core;
   * what the streams cost, which a shared machine's noise moves far less than latencies) and the
   * delivery p50 and p99.
   */
  unloaded?: { serverCpuPercent: number; latencyP50: number; latencyP99: number; cpu?: Phase["cpu"] };
  /**
   * With BENCH_LIVE_CONTROLS=1, the global timeline under the same load alone, while the author
   * posts with no stream open, with the streams open and nothing posted, and beside both: its
   * req/s and the CPU (% of one core) of the server, PostgreSQL and this process meanwhile.
   */
  controls?: Record<"alone" | "postingOnly" | "streamsIdle" | "both", Phase>;
}

interface Phase {
  reqPerSec: number;
  cpu: { server: number; postgres: number; bench: number };
  /** How late the server's event loop ran meanwhile (its /metrics, ms): what its requests waited. */
  loopDelay?: { mean: number; p99: number; max: number };
}

/**
 * The server's event-loop delay since its /metrics was last read (prom-client starts its
 * histogram again at each read): mean, p99 and max, in ms.
 */
async function loopDelayOf(serverUrl: string): Promise<Phase["loopDelay"]> {
  const text = await fetch(`${serverUrl}/metrics`).then((r) => r.text());
  const ms = (name: string) => Math.round(Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1]) * 1000);
  return {
    mean: ms("nodejs_eventloop_lag_mean_seconds"),
    p99: ms("nodejs_eventloop_lag_p99_seconds"),
    max: ms("nodejs_eventloop_lag_max_seconds"),
  };
}

/** CPU of the PostgreSQL instance of `db`, in ms (bench/load.ts postgresCpuMicros). */
async function postgresCpuMs(db: Services["db"]): Promise<number> {
  const [{ pid }] = await db.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  return postgresCpuMicros(pid) / 1000;
}

/** `work`'s figure, with the CPU of the server, PostgreSQL and this process meanwhile (% of one core). */
async function measured(
  db: Services["db"],
  serverPid: number | undefined,
  work: () => Promise<number>,
  serverUrl?: string,
): Promise<Phase> {
  const cpu = async () => ({
    server: serverPid === undefined ? Number.NaN : cpuMicros(serverPid) / 1000,
    postgres: await postgresCpuMs(db),
    bench: process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000,
  });
  if (serverUrl) await loopDelayOf(serverUrl);
  const [before, started] = [await cpu(), performance.now()];
  const reqPerSec = await work();
  const [after, elapsed] = [await cpu(), performance.now() - started];
  const loopDelay = serverUrl ? await loopDelayOf(serverUrl) : undefined;
  const percent = (k: keyof Phase["cpu"]) => Math.round(((after[k] - before[k]) / elapsed) * 100);
  const shares = { server: percent("server"), postgres: percent("postgres"), bench: percent("bench") };
  return { reqPerSec, cpu: shares, ...(loopDelay && { loopDelay }) };
}

const NOTE_ID = Buffer.from("event: note\nid: ");
/** Bytes of an id's line after NOTE_ID, at most: its digits and the newline. */
const ID_LINE = 24;
const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * A stream's bytes as they come, in pieces cut anywhere, to `heard(id)` with each note event's
 * id, found by its `event: note\nid: ` line: a frame is one chunk of the chunked answer, so chunk
 * sizes never cut one. Read as bytes, not decoded: a parser per stream, or even a string, would
 * cost this process (beside the server, on the same cores) more than the server spends sending.
 * A piece is scanned where it lies: only a line the piece's start cut is joined to what came
 * before (the whole piece joined to it, a buffer the size of a read, was most of this process's
 * major garbage collections once untimed streams were read in turns).
 */
export function noteIds(heard: (id: string) => void): (piece: Buffer) => void {
  /** The end of the last piece, where an id's line may have begun (a copy: pieces' memory is reused). */
  let rest: Buffer | undefined;
  /** Heard every id whose line ends in `data` from `from`; what may begin one kept in `rest`. */
  const scan = (data: Buffer, from: number) => {
    let at = data.indexOf(NOTE_ID, from);
    while (at !== -1) {
      const lineEnd = data.indexOf(10, at + NOTE_ID.length);
      if (lineEnd === -1) break;
      heard(data.toString("latin1", at + NOTE_ID.length, lineEnd));
      from = lineEnd + 1;
      at = data.indexOf(NOTE_ID, from);
    }
    const tail = Math.max(from, data.length - NOTE_ID.length - ID_LINE);
    rest = tail < data.length ? Buffer.from(data.subarray(tail)) : undefined;
  };
  return (piece) => {
    const before = rest;
    rest = undefined;
    if (!before) return scan(piece, 0);
    // A short piece: joined whole (a small buffer).
    if (piece.length < 2 * (NOTE_ID.length + ID_LINE)) return scan(Buffer.concat([before, piece]), 0);
    // An id's line begun in `before` ends within this many bytes of the piece.
    const joined = Buffer.concat([before, piece.subarray(0, NOTE_ID.length + ID_LINE)]);
    let from = 0;
    const at = joined.indexOf(NOTE_ID);
    if (at !== -1 && at < before.length) {
      const lineEnd = joined.indexOf(10, at + NOTE_ID.length);
      if (lineEnd !== -1) {
        heard(joined.toString("latin1", at + NOTE_ID.length, lineEnd));
        from = lineEnd + 1 - before.length;
      }
    }
    scan(piece, from);
  };
}

/** What every stream's socket reads into, in turn: each read is scanned before the next. */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

/**
 * One stream in TIMED_EVERY is timed: read as its bytes land, each note stamped at its read. The
 * others stand for clients on other machines, whose reads cost the server nothing: on these two
 * cores they are read in turns, each all it holds at once, every UNTIMED_READ_MS (their notes
 * counted, not stamped). Read as they land, their 2,000 sockets' reads cost this process as much
 * CPU as the server spent sending (bench/README.md, "Live: the streams' clients").
 */
const TIMED_EVERY = 10;
const UNTIMED_READ_MS = 500;

/**
 * Opens a stream and calls `heard(id)` with each note event's id. A bare socket (HTTP/1.1 by
 * hand): Node's HTTP client would parse and re-emit every chunk through streams, and its reads
 * cost more than the socket's own; `onread` hands each read to `noteIds` as it lands. An untimed
 * stream pauses after each read (its callback answers false) until `resume()`d.
 */
function subscribe(url: string, token: string, heard: (id: string) => void, timed: boolean): Promise<net.Socket> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    let head: Buffer | undefined = Buffer.alloc(0);
    const body = noteIds(heard);
    const socket = net.connect({
      host: hostname,
      port: Number(port),
      onread: {
        buffer: READ_BUFFER,
        callback: (size) => {
          const data = READ_BUFFER.subarray(0, size);
          if (!head) {
            body(data);
            return timed;
          }
          head = Buffer.concat([head, data]);
          const end = head.indexOf(HEAD_END);
          if (end === -1) return true;
          const status = head.toString("latin1", 0, head.indexOf("\r\n"));
          const rest = head.subarray(end + HEAD_END.length);
          head = undefined;
          if (!/^HTTP\/1\.1 200 /.test(status)) {
            socket.destroy();
            reject(new Error(`stream refused: ${status}`));
            return false;
          }
          resolve(socket);
          if (rest.length) body(rest);
          return timed;
        },
      },
    });
    socket.write(
      `GET ${pathname} HTTP/1.1\r\nhost: ${hostname}:${port}\r\nauthorization: Bearer ${token}\r\n` +
        "accept: text/event-stream\r\n\r\n",
    );
    socket.on("error", reject);
  });
}

export async function benchLive(
  services: Services,
  serverUrl: string,
  viewerToken: string,
  /** Another server on the same database, for the memory figure. */
  freshServer: () => Promise<{ url: string; rssMb(): number; stop(): Promise<void> }>,
  /** The server at serverUrl, for its CPU time. */
  serverPid?: number,
): Promise<LiveFigures> {
  const db = services.db;
  const author = FIRST;
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified, followers_count)
    SELECT ${FIRST}::bigint + g, 'live' || g, 'live' || g, 'live' || g || '@example.com', 'live' || g || '@example.com',
      'Live ' || g, '!', true, CASE WHEN g = 0 THEN ${FOLLOWERS}::int ELSE 0 END
    FROM generate_series(0, ${FOLLOWERS}::int) g`;
  await db.$executeRaw`
    INSERT INTO follows (follower_id, followee_id) SELECT ${FIRST}::bigint + g, ${author}::bigint
    FROM generate_series(1, ${FOLLOWERS}::int) g`;
  await db.$executeRaw`
    UPDATE accounts SET following_count = 1 WHERE id > ${FIRST}::bigint AND id <= ${FIRST}::bigint + ${FOLLOWERS}::int`;
  const token = async (k: number) => (await services.tokens.sign(FIRST + BigInt(k), "access")).token;
  const authorToken = await token(0);

  const timelineUrl = `${serverUrl}/timeline/global`;
  const quiet = (await load(timelineUrl, { token: viewerToken })).reqPerSec;

  /** Receipts of the timed streams, by note; every stream's notes counted. */
  const received = new Map<string, number[]>();
  let counted = 0;
  const heard = (id: string) => {
    counted++;
    const at = performance.now();
    const times = received.get(id);
    if (times) times.push(at);
    else received.set(id, [at]);
  };
  const tokens = await Promise.all(Array.from({ length: FOLLOWERS }, (_, k) => token(k + 1)));
  const untimed = new Set<net.Socket>();
  const readUntimed = setInterval(() => {
    for (const socket of untimed) socket.resume();
  }, UNTIMED_READ_MS);
  const openAll = async (url: string) => {
    const requests: net.Socket[] = [];
    for (const path of ["/streaming/home", "/streaming/global"]) {
      for (let k = 0; k < FOLLOWERS; k += 50) {
        const batch = tokens.slice(k, k + 50).map(async (t, i) => {
          const timed = (k + i) % TIMED_EVERY === 0;
          const socket = await subscribe(`${url}${path}`, t, timed ? heard : () => counted++, timed);
          if (!timed) {
            untimed.add(socket);
            socket.once("close", () => untimed.delete(socket));
          }
          return socket;
        });
        requests.push(...(await Promise.all(batch)));
      }
    }
    return requests;
  };

  // The author posts at 50 notes/s for `seconds`.
  const post = async (seconds: number, answered: Map<string, number>) => {
    const started = performance.now();
    const posts: Promise<void>[] = [];
    for (let i = 0; i < NOTES_PER_SECOND * seconds; i++) {
      const due = started + (i * 1000) / NOTES_PER_SECOND;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
      posts.push(
        fetch(`${serverUrl}/notes`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${authorToken}` },
          body: JSON.stringify({ content: `live note ${i}` }),
        })
          .then((r) => r.json() as Promise<{ id: string }>)
          .then(({ id }) => {
            answered.set(id, performance.now());
          }),
      );
    }
    await Promise.all(posts);
  };
  const latenciesOf = (answered: Map<string, number>) => {
    const latencies: number[] = [];
    for (const [id, at] of answered) {
      for (const receipt of received.get(id) ?? []) latencies.push(Math.max(0, receipt - at));
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? -1);
    return { timed: latencies.length, p50: at(0.5), p99: at(0.99) };
  };

  const controlled = process.env.BENCH_LIVE_CONTROLS === "1";
  const timelineLoad = async () => (await load(timelineUrl, { token: viewerToken, duration: SECONDS - 2 })).reqPerSec;
  // The load's CPU is counted over the load alone, while the author posts (or not).
  const beside = async (posting: boolean, answered = new Map<string, number>()) => {
    const posts = posting ? post(SECONDS, answered) : undefined;
    const phase = await measured(db, serverPid, timelineLoad, serverUrl);
    await posts;
    return phase;
  };
  const controls: Partial<NonNullable<LiveFigures["controls"]>> = {};
  if (controlled) {
    controls.alone = await beside(false);
    controls.postingOnly = await beside(true);
  }

  // Memory per idle stream: servers of their own, started alike, read after a rest: one with the
  // streams open, one that opened as many and closed them, one that opened none. (On one server
  // read before and after, the garbage of what it did before was collected in between and hid
  // the streams' share.) Held against the one that opened none, the figure is mostly what the
  // openings grew V8's heap by (its young generation, the requests' garbage), which it keeps
  // whether the streams stay open or not: against the one that closed them, what holding costs.
  const [holding, served, empty] = await Promise.all([freshServer(), freshServer(), freshServer()]);
  const idleStreams = await openAll(holding.url);
  for (const request of await openAll(served.url)) request.destroy();
  await new Promise((resolve) => setTimeout(resolve, 8_000));
  const perStreamKb = (mb: number) => Math.round((mb * 1024) / idleStreams.length);
  const rssPerIdleStreamKb = perStreamKb(holding.rssMb() - served.rssMb());
  const rssPerOpeningKb = perStreamKb(holding.rssMb() - empty.rssMb());
  for (const request of idleStreams) request.destroy();
  await Promise.all([holding.stop(), served.stop(), empty.stop()]);

  let requests = await openAll(serverUrl);
  const timedStreams = requests.length / TIMED_EVERY;
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  if (controlled) controls.streamsIdle = await beside(false);

  let unloaded: LiveFigures["unloaded"];
  if (serverPid !== undefined) {
    const alone = new Map<string, number>();
    const phase = await measured(db, serverPid, async () => {
      await post(UNLOADED_SECONDS, alone);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return 0;
    });
    const serverCpuPercent = phase.cpu.server;
    const { p50, p99 } = latenciesOf(alone);
    unloaded = { serverCpuPercent, latencyP50: p50, latencyP99: p99 };
    if (controlled) unloaded.cpu = phase.cpu;
  }

  // Then while the global timeline is loaded, in turns with the timeline alone (the streams
  // closed, then opened again): the machine's speed drifts by a fifth over minutes, and one figure
  // of each, minutes apart, compared its moments as much as the streams. And the page changes:
  // once the author has posted, the timeline's page is of their notes, cheaper to write than the
  // seed's (in one run 963 req/s before, 1,270-1,477 after), so each run alone follows one beside
  // the deliveries. Medians of TURNS each.
  const answered = new Map<string, number>();
  const quietRuns: Phase[] = [];
  const bothRuns: Phase[] = [];
  let delivered = 0;
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn > 0) {
      requests = await openAll(serverUrl);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
    const countedBefore = counted;
    bothRuns.push(await beside(true, answered));
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    delivered += counted - countedBefore;
    for (const request of requests) request.destroy();
    quietRuns.push(
      await measured(db, serverPid, async () => (await load(timelineUrl, { token: viewerToken })).reqPerSec, serverUrl),
    );
  }
  clearInterval(readUntimed);
  const both = medianRun(bothRuns);

  const loaded = latenciesOf(answered);
  return {
    streams: requests.length,
    notesPerSecond: NOTES_PER_SECOND,
    delivered,
    timedStreams,
    timedDeliveries: loaded.timed,
    expected: answered.size * requests.length,
    latencyP50: loaded.p50,
    latencyP99: loaded.p99,
    rssPerIdleStreamKb,
    rssPerOpeningKb,
    globalTimeline: {
      quiet: medianRun(quietRuns).reqPerSec,
      withStreams: both.reqPerSec,
      turns: { quiet: quietRuns.map((r) => r.reqPerSec), withStreams: bothRuns.map((r) => r.reqPerSec) },
      loopDelayP99: {
        quiet: medianOf(quietRuns.map((r) => r.loopDelay?.p99 ?? 0)),
        withStreams: medianOf(bothRuns.map((r) => r.loopDelay?.p99 ?? 0)),
      },
      before: quiet,
    },
    unloaded,
    controls: controlled ? ({ ...controls, both } as LiveFigures["controls"]) : undefined,
  };
}
