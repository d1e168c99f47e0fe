// Snowflake worker ids leased from PostgreSQL (issue 17, CONTRACT 11): instances starting at once
// get distinct ids; an id is taken again only once its lease has expired; a lease is renewed
// while its instance runs, and an instance whose id was taken over stops minting.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const never = () => {
  throw new Error("lease lost");
};

describe("worker id leases", () => {
  it("20 instances starting at once get 20 distinct ids; given back, they are free again", async () => {
    const leases = await Promise.all(Array.from({ length: 20 }, () => leaseWorkerId(db(), log, never)));
    expect(new Set(leases.map((l) => l.workerId)).size).toBe(20);
    await Promise.all(leases.map((l) => l.release()));
    const [{ held }] = await db().$queryRaw<{ held: number }[]>`
      SELECT count(*)::int AS held FROM worker_leases WHERE expires_at > now()`;
    expect(held).toBe(0);
  });

  it("never takes a live lease; an expired one is taken again", async () => {
    const leases: WorkerLease[] = [];
    for (let round = 0; round < 8; round++)
      leases.push(...(await Promise.all(Array.from({ length: 128 }, () => leaseWorkerId(db(), log, never)))));
    expect(new Set(leases.map((l) => l.workerId)).size).toBe(1024);
    await expect(leaseWorkerId(db(), log, never)).rejects.toBeInstanceOf(NoWorkerId);
    // One instance died: its lease runs out, and only then is its id taken.
    const dead = leases[500].workerId;
    await db().$executeRaw`UPDATE worker_leases SET expires_at = now() - interval '1 second' WHERE worker_id = ${dead}`;
    const next = await leaseWorkerId(db(), log, never);
    expect(next.workerId).toBe(dead);
    await Promise.all([...leases.filter((l) => l.workerId !== dead), next].map((l) => l.release()));
  });

  it("renews the lease while it runs, and stops an instance whose expired lease was taken over", async () => {
    let lost = 0;
    const lease = await leaseWorkerId(db(), log, () => (lost += 1), 1);
    const expiry = async () =>
      (
        await db().$queryRaw<{ expires_at: Date }[]>`
          SELECT expires_at FROM worker_leases WHERE worker_id = ${lease.workerId}`
      )[0].expires_at.getTime();
    const first = await expiry();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await expiry()).toBeGreaterThan(first);
    expect(lost).toBe(0);
    // Another instance took the id (say this one was cut off past its lease): it must stop.
    await db().$executeRaw`UPDATE worker_leases SET owner = 'someone else' WHERE worker_id = ${lease.workerId}`;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(lost).toBeGreaterThan(0);
    await lease.release();
    await db()
      .$executeRaw`UPDATE worker_leases SET owner = NULL, expires_at = now() WHERE worker_id = ${lease.workerId}`;
  });
});
