// Streams that drop and resume under concurrent writers (docs/live.md#resume): 200 global streams
// on two servers of one database while 8 writers post about 100 notes/s for 10 s, and every 100 ms
// ten streams are cut abruptly and resume on the other server with Last-Event-ID. Each stream must
// receive every note once: lost and repeated are counted, beside how many arrived out of id order
// (notes commit out of id order; the journal's order is commit order) and the delivery latency with
// and without the churn, measured in this run.
import http from "node:http";
import type { Services } from "../src/domain/context.ts";

const STREAMS = 200;
const WRITERS = 8;
const NOTES_PER_WRITER_PER_SECOND = 12;
const SECONDS = 10;
const CUT_EVERY_MS = 100;
const CUT_AT_ONCE = 10;
/** Far from the seeded accounts, the hostile crowd and the live bench's followers. */
const FIRST = 6_000_000_000n;

export interface ChurnFigures {
  streams: number;
  notes: number;
  notesPerSecond: number;
  reconnects: number;
  /** Streams the server ended (a reader it found too slow), which the reader resumed at once. */
  endedByServer: number;
  /** Resumed streams, from the request to the answer's head: p50 and p99, ms. */
  resumeMs: { p50: number; p99: number };
  /**
   * Resumed streams whose reader heard nothing for over a second (from its last note on the
   * stream before to its first on this one): at 96 notes/s more than a replay's 100 came
   * meanwhile, and the oldest of them are not sent (docs/live.md#resume).
   */
  awayOverASecond: number;
  events: number;
  lost: number;
  repeated: number;
  outOfIdOrderPercent: number;
  latencyP99: { churning: number; steady: number };
}

interface Reader {
  /** Each stream its own account's: one IP holds only MAX_STREAMS anonymous streams. */
  token: string;
  server: number;
  last?: string;
  ids: string[];
  request?: http.ClientRequest;
  /** Streams the server ended (a client it found slow, say), resumed at once as EventSource would. */
  endedByServer: number;
  /** Until the round is over. */
  open: boolean;
  connections: Connection[];
}

const NOTE_ID = "event: note\nid: ";

/** One stream's connection: when it was asked for, and how many notes it received that were answered before. */
interface Connection {
  askedAt: number;
  answeredAt?: number;
  firstNoteAt?: number;
  lastNoteAt?: number;
}

function connect(url: string, reader: Reader, heard: (id: string, connection: Connection) => void): void {
  const connection: Connection = { askedAt: performance.now() };
  reader.connections.push(connection);
  const headers: Record<string, string> = { accept: "text/event-stream", authorization: `Bearer ${reader.token}` };
  if (reader.last) headers["last-event-id"] = reader.last;
  const request = http.get(`${url}/streaming/global`, { headers });
  reader.request = request;
  const ended = () => {
    // Not cut by this bench (it replaces reader.request first): the server ended it.
    if (!reader.open || reader.request !== request) return;
    reader.endedByServer++;
    connect(url, reader, heard);
  };
  request.on("close", ended);
  request.on("response", (response) => {
    connection.answeredAt = performance.now();
    let rest = "";
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => {
      // Whole events only: one cut mid-event was not received.
      const text = rest + chunk;
      const end = text.lastIndexOf("\n\n");
      if (end === -1) {
        rest = text;
        return;
      }
      rest = text.slice(end + 2);
      for (const frame of text.slice(0, end).split("\n\n")) {
        if (!frame.startsWith(NOTE_ID)) continue;
        const id = frame.slice(NOTE_ID.length, frame.indexOf("\n", NOTE_ID.length));
        reader.ids.push(id);
        reader.last = id;
        heard(id, connection);
      }
    });
  });
  request.on("error", () => {});
}

async function round(urls: string[], writerTokens: string[], readerTokens: string[], churn: boolean) {
  const readers: Reader[] = readerTokens.map((token, k) => ({
    token,
    server: k % 2,
    ids: [],
    endedByServer: 0,
    open: true,
    connections: [],
  }));
  const answered = new Map<string, number>();
  const received: { id: string; at: number }[] = [];
  const hear = (id: string, connection: Connection) => {
    const at = performance.now();
    received.push({ id, at });
    connection.firstNoteAt ??= at;
    connection.lastNoteAt = at;
  };
  for (const reader of readers) connect(urls[reader.server], reader, hear);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  let reconnects = 0;
  const cutting = churn
    ? setInterval(() => {
        for (let i = 0; i < CUT_AT_ONCE; i++) {
          const reader = readers[Math.floor(Math.random() * readers.length)];
          reader.request?.destroy();
          reader.server = 1 - reader.server;
          connect(urls[reader.server], reader, hear);
          reconnects++;
        }
      }, CUT_EVERY_MS)
    : undefined;
  const started = performance.now();
  await Promise.all(
    writerTokens.map(async (token, w) => {
      for (let i = 0; i < NOTES_PER_WRITER_PER_SECOND * SECONDS; i++) {
        const due = started + (i * 1000) / NOTES_PER_WRITER_PER_SECOND;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
        const response = await fetch(`${urls[(w + i) % 2]}/notes`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ content: `churn ${w}.${i}` }),
        });
        const { id } = (await response.json()) as { id: string };
        answered.set(id, performance.now());
      }
    }),
  );
  clearInterval(cutting);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  for (const reader of readers) {
    reader.open = false;
    reader.request?.destroy();
  }

  let lost = 0;
  let repeated = 0;
  let outOfOrder = 0;
  let events = 0;
  for (const reader of readers) {
    const unique = new Set(reader.ids);
    events += reader.ids.length;
    repeated += reader.ids.length - unique.size;
    for (const id of answered.keys()) if (!unique.has(id)) lost++;
    for (let i = 1; i < reader.ids.length; i++) if (BigInt(reader.ids[i]) < BigInt(reader.ids[i - 1])) outOfOrder++;
  }
  const resumed = readers.flatMap((r) => r.connections.slice(1));
  const resumeMs = resumed
    .map((c) => (c.answeredAt ?? Number.POSITIVE_INFINITY) - c.askedAt)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  const latencies = received
    .map(({ id, at }) => at - (answered.get(id) ?? at))
    .filter((ms) => ms >= 0)
    .sort((a, b) => a - b);
  return {
    notes: answered.size,
    reconnects,
    endedByServer: readers.reduce((sum, r) => sum + r.endedByServer, 0),
    resumeMs: {
      p50: Math.round(resumeMs[Math.floor(resumeMs.length * 0.5)] ?? -1),
      p99: Math.round(resumeMs[Math.floor(resumeMs.length * 0.99)] ?? -1),
    },
    awayOverASecond: readers
      .flatMap((r) => {
        // The last note heard before each connection, on any earlier one.
        let heardAt = r.connections[0]?.lastNoteAt;
        return r.connections.slice(1).map((c) => {
          const away = c.firstNoteAt !== undefined && heardAt !== undefined && c.firstNoteAt - heardAt > 1_000;
          heardAt = c.lastNoteAt ?? heardAt;
          return away;
        });
      })
      .filter(Boolean).length,
    events,
    lost,
    repeated,
    outOfIdOrderPercent: Math.round((outOfOrder / Math.max(events, 1)) * 1000) / 10,
    p99: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? -1),
  };
}

export async function benchChurn(
  services: Services,
  serverUrl: string,
  otherServer: () => Promise<{ url: string; stop(): Promise<void> }>,
): Promise<ChurnFigures> {
  const db = services.db;
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
    SELECT ${FIRST}::bigint + g, 'churn' || g, 'churn' || g, 'churn' || g || '@example.com',
      'churn' || g || '@example.com', 'Churn ' || g, '!', true
    FROM generate_series(1, ${WRITERS + STREAMS}::int) g`;
  const tokens = await Promise.all(
    Array.from(
      { length: WRITERS + STREAMS },
      async (_, k) => (await services.tokens.sign(FIRST + BigInt(k + 1), "access")).token,
    ),
  );
  const [writers, readers] = [tokens.slice(0, WRITERS), tokens.slice(WRITERS)];
  const other = await otherServer();
  try {
    const urls = [serverUrl, other.url];
    const steady = await round(urls, writers, readers, false);
    const churning = await round(urls, writers, readers, true);
    return {
      streams: STREAMS,
      notes: churning.notes,
      notesPerSecond: WRITERS * NOTES_PER_WRITER_PER_SECOND,
      reconnects: churning.reconnects,
      endedByServer: churning.endedByServer + steady.endedByServer,
      resumeMs: churning.resumeMs,
      awayOverASecond: churning.awayOverASecond,
      events: churning.events,
      lost: churning.lost,
      repeated: churning.repeated,
      outOfIdOrderPercent: churning.outOfIdOrderPercent,
      latencyP99: { churning: churning.p99, steady: steady.p99 },
    };
  } finally {
    await other.stop();
  }
}
