// Live delivery does not wait behind requests (docs/live.md#fan-out): the hub reads the journal
// and builds its events on connections of its own, so a request pool taken whole (a load of
// requests, each holding its connection) holds no stream's events back.
import { expect, it } from "vitest";
import { poolUse } from "../src/db/client.ts";
import { type LiveEvent, LiveStream } from "../src/domain/live/stream.ts";
import { account } from "./support/fixtures.ts";
import { serverAndOperator } from "./support/server.ts";

const opened = serverAndOperator();

it("a note reaches a stream while every connection of the request pool is held", async () => {
  const alice = await account(opened.server, "alice");
  const hub = opened.server.services.live;
  if (!hub) throw new Error("no hub");
  const stream = new LiveStream("global", undefined, "192.0.2.1");
  await hub.add(stream);
  const heard: LiveEvent[] = [];
  const arrived = new Promise<void>((resolve) =>
    stream.attach((event) => {
      heard.push(event);
      resolve();
    }),
  );

  // Every pooled connection (and one more request, queued) waits on a lock the operator holds.
  const LOCK = 310_031;
  await opened.operator.query("SELECT pg_advisory_lock($1)", [LOCK]);
  const held: Promise<unknown>[] = [];
  try {
    // (A Prisma query runs once awaited: `then` sends it.)
    for (let i = 0; i <= 20; i++)
      held.push(
        opened.server.services.db.$queryRaw`SELECT pg_advisory_xact_lock(${LOCK})`.then(
          () => {},
          () => {},
        ),
      );
    for (;;) {
      const use = poolUse(opened.server.services.db);
      if (use && use.idle === 0 && use.waiting > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    // Written by another client: the journal's trigger records it and wakes the hub.
    const id = 4_000_000_000_000n;
    await opened.operator.query("INSERT INTO notes (id, author_id, content) VALUES ($1, $2, 'through a full pool')", [
      id,
      alice.id,
    ]);
    // Bounded, never a hang: with the hub's reads on the request pool, nothing came until the
    // lock was given back (and its waits for a connection failed after 5 s).
    await Promise.race([
      arrived,
      new Promise((_, reject) => setTimeout(() => reject(new Error("no event while the pool was held")), 8_000)),
    ]);
    expect(heard.map((e) => [e.event, e.id])).toEqual([["note", id]]);
    expect(poolUse(opened.server.services.db)?.waiting).toBeGreaterThan(0);
  } finally {
    await opened.operator.query("SELECT pg_advisory_unlock($1)", [LOCK]);
    await Promise.allSettled(held);
    stream.end("closed");
  }
});
