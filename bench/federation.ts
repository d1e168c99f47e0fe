// Federation across two Murmur servers on this machine, each a host of its own (127.0.0.2 and
// 127.0.0.3, each with its own PostgreSQL), as docs/federation.md describes them: bob on B follows
// alice on A, and what alice posts reaches bob's home stream on B.
// - Delivery time: from alice's POST on A to the note's event on bob's home stream on B, one note
//   at a time (p50, p99): A's outbox, its queue, the signed POST, B's verification, queue and
//   storing, and B's live fan-out.
// - Intake: notes posted on A by 8 authors at once, all followed by bob, and the rate at which
//   they arrive on B's stream: both servers' whole path on the same two cores, so a floor of what
//   B alone takes in. (One author's deliveries to a server go one after another, in order.)
import { openSse, type SseClient } from "../test/support/sse.ts";
import { type BenchServer, benchAccount, startBenchServer } from "./server.ts";

export interface FederationFigures {
  delivery: { notes: number; p50: number; p99: number };
  intake: { notes: number; seconds: number; perSecond: number };
}

const FEDERATING = { FEDERATION: "true", FEDERATION_ALLOW_PRIVATE: "true" };

const AUTHORS = 8;

async function request(server: BenchServer, method: string, path: string, body?: unknown, token = server.token) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Waits until `check` holds, for at most `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The stream's events from `from` on whose note's content is one of `contents`, as they come. */
async function received(stream: SseClient, from: number, contents: Set<string>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (let index = from; contents.size > 0; index++) {
    const event = await stream.event(index, Math.max(1, deadline - Date.now()));
    if (event.event === "note") contents.delete((JSON.parse(event.data) as { content: string }).content);
  }
}

export async function benchFederation(options: { notes?: number; burst?: number } = {}): Promise<FederationFigures> {
  const notes = options.notes ?? 100;
  const burst = options.burst ?? 400;
  const [a, b] = await Promise.all([
    startBenchServer({ host: "127.0.0.2", name: "alice", env: FEDERATING }),
    startBenchServer({ host: "127.0.0.3", name: "bob", env: FEDERATING }),
  ]);
  let stream: SseClient | undefined;
  try {
    const authors = await Promise.all(Array.from({ length: AUTHORS }, (_, i) => benchAccount(a.url, `author${i}`)));
    for (const name of ["alice", ...authors.map((_, i) => `author${i}`)]) {
      await request(b, "POST", `/accounts/@${name}@${new URL(a.url).host}/follow`, {});
    }
    await until(
      async () => ((await request(b, "GET", "/accounts/bob")) as { following_count: number }).following_count > AUTHORS,
      30_000,
      "the Accepts",
    );
    stream = await openSse(`${b.url}/streaming/home?access_token=${encodeURIComponent(b.token)}`);
    let seen = 0;
    const times: number[] = [];
    // Three uncounted first: the first delivery to a server opens its connections and keys.
    for (let i = 0; i < notes + 3; i++) {
      const content = `federated ${i} ${Date.now()}`;
      const started = performance.now();
      await request(a, "POST", "/notes", { content });
      await received(stream, seen, new Set([content]), 30_000);
      seen = stream.events.length;
      if (i >= 3) times.push(performance.now() - started);
    }
    times.sort((x, y) => x - y);
    const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]);

    const contents = Array.from({ length: burst }, (_, i) => `burst ${i} ${Date.now()}`);
    const started = performance.now();
    const arrived = received(stream, seen, new Set(contents), 120_000);
    const queue = [...contents];
    await Promise.all(
      authors.map(async ({ token }) => {
        for (let content = queue.shift(); content !== undefined; content = queue.shift()) {
          await request(a, "POST", "/notes", { content }, token);
        }
      }),
    );
    await arrived;
    const seconds = (performance.now() - started) / 1000;
    return {
      delivery: { notes, p50: at(0.5), p99: at(0.99) },
      intake: { notes: burst, seconds: Math.round(seconds * 10) / 10, perSecond: Math.round(burst / seconds) },
    };
  } finally {
    stream?.close();
    await Promise.all([a.stop(), b.stop()]);
  }
}

export function printFederation(figures: FederationFigures, before?: FederationFigures): void {
  console.log("\nFederation, two servers on this machine (bench/federation.ts):");
  console.table({
    "POST on A to bob's home stream on B, ms": {
      p50: figures.delivery.p50,
      p99: figures.delivery.p99,
      "before p50": before?.delivery.p50 ?? "",
      "before p99": before?.delivery.p99 ?? "",
    },
    "notes posted on A by 8 authors, arrived on B per s": {
      rate: figures.intake.perSecond,
      "before rate": before?.intake.perSecond ?? "",
    },
  });
}
