// Snowflake worker ids leased from PostgreSQL (docs/fleet.md#worker-ids): instances starting at
// once get distinct ids; an id is taken again only once its lease has expired; a lease is renewed
// while its instance runs, and an instance whose id was taken over stops minting with it and leases
// another. test/worker-lease-outage.test.ts: a lease that could not be renewed in time.
import { Writable } from "node:stream";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnowflakeGenerator } from "../src/db/snowflake.ts";
import { leaseWorkerId, NoWorkerId, type WorkerLease } from "../src/db/worker-lease.ts";
import { createLogger } from "../src/log.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const log = createLogger("silent");
let server: TestServer;
const db = () => server.services.db;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe("worker id leases", () => {
  it("20 instances starting at once get 20 distinct ids; given back, they are free again", async () => {
    const leases = await Promise.all(Array.from({ length: 20 }, () => leaseWorkerId(db(), log)));
    expect(new Set(leases.map((l) => l.workerId)).size).toBe(20);
    await Promise.all(leases.map((l) => l.release()));
    const [{ held }] = await db().$queryRaw<{ held: number }[]>`
      SELECT count(*)::int AS held FROM worker_leases WHERE expires_at > now()`;
    expect(held).toBe(0);
  });

  it("never takes a live lease; an expired one is taken again", async () => {
    const leases: WorkerLease[] = [];
    for (let round = 0; round < 8; round++)
      leases.push(...(await Promise.all(Array.from({ length: 128 }, () => leaseWorkerId(db(), log)))));
    expect(new Set(leases.map((l) => l.workerId)).size).toBe(1024);
    await expect(leaseWorkerId(db(), log)).rejects.toBeInstanceOf(NoWorkerId);
    // One instance died: its lease runs out, and only then is its id taken.
    const dead = leases[500].workerId;
    await db().$executeRaw`UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = ${dead}`;
    const next = await leaseWorkerId(db(), log);
    expect(next.workerId).toBe(dead);
    await Promise.all([...leases.filter((l) => l.workerId !== dead), next].map((l) => l.release()));
  });

  it("renews the lease while it runs; an id taken over is minted with no more, another is leased", async () => {
    const lease = await leaseWorkerId(db(), log, 1);
    const ids = new SnowflakeGenerator(lease.current);
    const taken = lease.workerId;
    const expiry = async () =>
      (
        await db().$queryRaw<{ expires_at: Date }[]>`
          SELECT expires_at FROM worker_leases WHERE worker_id = ${taken}`
      )[0].expires_at.getTime();
    const first = await expiry();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await expiry()).toBeGreaterThan(first);
    expect(lease.current()).toBe(taken);
    const before = ids.next();
    expect(Number((before >> 12n) & 0x3ffn)).toBe(taken);
    // Another instance took the id (say this one was cut off past its lease): this one must not
    // mint with it again, and goes on with a free one.
    await db().$executeRaw`UPDATE worker_leases SET owner = 'someone else' WHERE worker_id = ${taken}`;
    const deadline = Date.now() + 5000;
    while (lease.workerId === taken && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const now = lease.current();
    expect(now).toBeDefined();
    expect(now).not.toBe(taken);
    const after = ids.next();
    expect(Number((after >> 12n) & 0x3ffn)).toBe(now);
    expect(after).toBeGreaterThan(before);
    const [row] = await db().$queryRaw<{ owner: string }[]>`SELECT owner FROM worker_leases WHERE worker_id = ${now}`;
    expect(row.owner).not.toBe("someone else");
    await lease.release();
    const [{ held }] = await db().$queryRaw<{ held: number }[]>`
      SELECT count(*)::int AS held FROM worker_leases WHERE worker_id = ${now} AND expires_at > now()`;
    expect(held).toBe(0);
    await db().$executeRaw`UPDATE worker_leases SET owner = NULL, expires_at = now() WHERE worker_id = ${taken}`;
  });

  it("says its lease is lost when it expires, though the timer for it fires early", async () => {
    const said: string[] = [];
    const captured = new Writable({
      write(chunk, _encoding, done) {
        for (const text of chunk.toString().split("\n")) if (text) said.push(JSON.parse(text).msg);
        done();
      },
    });
    // Every timer the lease arms fires 100 ms early, as one armed from a stale event-loop clock may.
    const setTimer = globalThis.setTimeout;
    globalThis.setTimeout = ((run: () => void, ms = 0) => setTimer(run, Math.max(0, ms - 100))) as typeof setTimeout;
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    let lease: WorkerLease | undefined;
    try {
      lease = await leaseWorkerId(db(), createLogger("info", captured), 1);
      // Its renewals wait on the row (a database that does not answer) until the lease expires.
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM worker_leases WHERE worker_id = $1 FOR UPDATE", [lease.workerId]);
      const deadline = Date.now() + 5000;
      while (!said.some((msg) => msg.includes("expired")) && Date.now() < deadline)
        await new Promise((resolve) => setTimer(resolve, 20));
      expect(lease.current()).toBeUndefined();
      expect(said.filter((msg) => msg.startsWith("worker id"))).toEqual([
        `worker id ${lease.workerId}'s lease expired before it could be renewed: no ids are minted (writes answer 503) until a worker id is leased again`,
      ]);
    } finally {
      globalThis.setTimeout = setTimer;
      await holder.query("ROLLBACK");
      await holder.end();
    }
    const deadline = Date.now() + 5000;
    while (lease.current() === undefined && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(said.at(-1)).toBe(`holding worker id ${lease.workerId} again: ids are minted again`);
    await lease.release();
  });
});
