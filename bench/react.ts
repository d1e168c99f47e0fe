// Reactions to one note: 32 connections, each request another account of a crowd made
// by SQL, as bench/hostile.ts's last figure, on a crowd of its own so it can run alone
// (`npm run bench -- --only reactions`).
import autocannon from "autocannon";
import type { Services } from "../src/domain/context.ts";
import { cpuMicros, type Load } from "./load.ts";

/** Far from the seeded accounts, the hostile crowd (3e9), the live (5e9) and churn (6e9) benches' accounts. */
const FIRST_REACTOR = 7_000_000_000n;
const REACTORS = 40_000;

export async function benchReactions(
  services: Services,
  serverUrl: string,
  authorId: bigint,
  /** The server's process, whose CPU time per reaction is reported beside the rate. */
  serverPid: number,
  runs = 3,
): Promise<(Load & { cpuMicrosPerRequest: number })[]> {
  const db = services.db;
  await db.$executeRaw`
    INSERT INTO accounts (id, name, name_key, email, email_key, nickname, passphrase_hash, verified)
    SELECT ${FIRST_REACTOR}::bigint + g, 'reactor' || g, 'reactor' || g, 'reactor' || g || '@example.com',
      'reactor' || g || '@example.com', 'Reactor ' || g, '!', true
    FROM generate_series(1, ${REACTORS}::int) g
    ON CONFLICT DO NOTHING`;
  const tokens = await Promise.all(
    Array.from(
      { length: REACTORS },
      async (_, i) => (await services.tokens.sign(FIRST_REACTOR + BigInt(i + 1), "access")).token,
    ),
  );
  const authorToken = (await services.tokens.sign(authorId, "access")).token;
  // Each run reacts as accounts of its own slice of the crowd, so no run finds its callers' tokens
  // or accounts already in the server's caches; a first run, on the last slice and not counted,
  // warms the server's code (JIT) as the earlier runs of a full bench would have.
  const slice = Math.floor(REACTORS / (runs + 1));
  const loads: (Load & { cpuMicrosPerRequest: number })[] = [];
  for (let run = -1; run < runs; run++) {
    const first = (run < 0 ? runs : run) * slice;
    // A new note each run: every account reacts to a note once.
    // Posted through the server: the bench's own id generator may have lost its worker lease on
    // a machine this busy.
    const target = (await fetch(`${serverUrl}/notes`, {
      method: "POST",
      headers: { authorization: `Bearer ${authorToken}`, "content-type": "application/json" },
      body: JSON.stringify({ content: "react to me" }),
    }).then((r) => r.json())) as { id: string };
    let next = 0;
    const cpuBefore = cpuMicros(serverPid);
    const result = await autocannon({
      url: `${serverUrl}/notes/${target.id}/reaction`,
      connections: 32,
      duration: run < 0 ? 2 : 5,
      method: "POST",
      body: JSON.stringify({ emoji: "👍" }),
      headers: { "content-type": "application/json" },
      requests: [
        {
          setupRequest: (request) => ({
            ...request,
            headers: { ...request.headers, authorization: `Bearer ${tokens[first + (next++ % slice)]}` },
          }),
        },
      ],
    });
    if (run >= 0)
      loads.push({
        reqPerSec: Math.round(result.requests.average),
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.errors + result.non2xx,
        cpuMicrosPerRequest: Math.round((cpuMicros(serverPid) - cpuBefore) / result.requests.total),
      });
  }
  return loads;
}
