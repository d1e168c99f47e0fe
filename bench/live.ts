// Live updates under load (docs/live.md#fan-out): 2,000 Server-Sent Events streams on one instance,
// the home and global streams of 1,000 followers of one author, while that author posts 50 notes/s.
// Delivery latency is from each POST's answer to each stream's receipt of that note; the server's
// RSS is read before and after the streams open (idle); the global timeline's throughput is
// measured meanwhile, beside the same measure with no stream open.
import fs from "node:fs";
import http from "node:http";
import type { Services } from "../src/domain/context.ts";
import { load } from "./load.ts";

const FOLLOWERS = 1_000;
const NOTES_PER_SECOND = 50;
const SECONDS = 10;
const UNLOADED_SECONDS = 5;
/** Far from the seeded accounts and the hostile crowd. */
const FIRST = 5_000_000_000n;

export interface LiveFigures {
  streams: number;
  notesPerSecond: number;
  delivered: number;
  expected: number;
  latencyP50: number;
  latencyP99: number;
  /** RSS of a server holding the idle streams beside one that opened and closed as many. */
  rssPerIdleStreamKb: number;
  /** The same beside one that opened none (the figure of the runs before 2026-11-26, noon). */
  rssPerOpeningKb: number;
  globalTimeline: { quiet: number; withStreams: number };
  /**
   * The same deliveries with no other load first: the server's CPU meanwhile (% of one core;
   * what the streams cost, which a shared machine's noise moves far less than latencies) and the
   * delivery p50 and p99.
   */
  unloaded?: { serverCpuPercent: number; latencyP50: number; latencyP99: number };
}

/** A process's CPU time so far, in ms (Linux: /proc, in clock ticks of 10 ms); NaN elsewhere. */
function cpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

const NOTE_ID = "event: note\nid: ";

/** Opens a stream and calls `heard(id)` with each note event's id. */
function subscribe(url: string, token: string, heard: (id: string) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } });
    request.on("response", (response) => {
      if (response.statusCode !== 200) reject(new Error(`stream refused: ${response.statusCode}`));
      // The ids of note events, found by their `event: note\nid: ` lines: a full parser per
      // stream would cost this process more than the server spends sending.
      let rest = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        const text = rest + chunk;
        let at = text.indexOf(NOTE_ID);
        let end = 0;
        while (at !== -1) {
          const lineEnd = text.indexOf("\n", at + NOTE_ID.length);
          if (lineEnd === -1) break;
          heard(text.slice(at + NOTE_ID.length, lineEnd));
          end = lineEnd;
          at = text.indexOf(NOTE_ID, lineEnd);
        }
        rest = text.slice(Math.max(end, text.length - NOTE_ID.length - 24));
      });
      resolve(request);
    });
    request.on("error", reject);
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

  const received = new Map<string, number[]>();
  const heard = (id: string) => {
    const at = performance.now();
    const times = received.get(id);
    if (times) times.push(at);
    else received.set(id, [at]);
  };
  const tokens = await Promise.all(Array.from({ length: FOLLOWERS }, (_, k) => token(k + 1)));
  const openAll = async (url: string) => {
    const requests: http.ClientRequest[] = [];
    for (const path of ["/streaming/home", "/streaming/global"]) {
      for (let k = 0; k < FOLLOWERS; k += 50) {
        const batch = tokens.slice(k, k + 50).map((t) => subscribe(`${url}${path}`, t, heard));
        requests.push(...(await Promise.all(batch)));
      }
    }
    return requests;
  };

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

  const requests = await openAll(serverUrl);
  await new Promise((resolve) => setTimeout(resolve, 2_000));

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
    return { delivered: latencies.length, p50: at(0.5), p99: at(0.99) };
  };

  let unloaded: LiveFigures["unloaded"];
  if (serverPid !== undefined) {
    const alone = new Map<string, number>();
    const [cpuBefore, startedAt] = [cpuMs(serverPid), performance.now()];
    await post(UNLOADED_SECONDS, alone);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const serverCpuPercent = Math.round(((cpuMs(serverPid) - cpuBefore) / (performance.now() - startedAt)) * 100);
    const { p50, p99 } = latenciesOf(alone);
    unloaded = { serverCpuPercent, latencyP50: p50, latencyP99: p99 };
  }

  // Then while the global timeline is loaded.
  const answered = new Map<string, number>();
  const posting = post(SECONDS, answered);
  const withStreams = (await load(timelineUrl, { token: viewerToken, duration: SECONDS - 2 })).reqPerSec;
  await posting;
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  for (const request of requests) request.destroy();

  const loaded = latenciesOf(answered);
  return {
    streams: requests.length,
    notesPerSecond: NOTES_PER_SECOND,
    delivered: loaded.delivered,
    expected: answered.size * requests.length,
    latencyP50: loaded.p50,
    latencyP99: loaded.p99,
    rssPerIdleStreamKb,
    rssPerOpeningKb,
    globalTimeline: { quiet, withStreams },
    unloaded,
  };
}
