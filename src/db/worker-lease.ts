// Snowflake worker ids leased from PostgreSQL (CONTRACT 11), for instances started without
// WORKER_ID: each takes a free id at start, renews its lease while it runs and gives it back at
// shutdown. An id is taken again only once its lease has expired, the least recently used first;
// an instance that cannot renew before its lease expires stops, since another may take its id.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import { RepeatedFailure } from "../log.ts";
import type { Db } from "./client.ts";

export const LEASE_SECONDS = 60;

export class NoWorkerId extends Error {}

export interface WorkerLease {
  readonly workerId: number;
  /** Gives the id back (at shutdown: no more ids are minted). */
  release(): Promise<void>;
}

/** Takes a free worker id; NoWorkerId when all 1,024 are held by live instances. */
export async function leaseWorkerId(
  db: Db,
  log: Logger,
  onLost: () => void = () => {
    log.fatal("the snowflake worker id's lease expired before it could be renewed: stopping");
    process.exit(1);
  },
  leaseSeconds = LEASE_SECONDS,
): Promise<WorkerLease> {
  const owner = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  // SKIP LOCKED: instances starting at once each take another row.
  const [taken] = await db.$queryRaw<{ worker_id: number; expires_at: Date }[]>`
    UPDATE worker_leases SET owner = ${owner}, expires_at = now() + make_interval(secs => ${leaseSeconds})
    WHERE worker_id = (
      SELECT worker_id FROM worker_leases WHERE expires_at < now()
      ORDER BY expires_at, worker_id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING worker_id, expires_at`;
  if (!taken) throw new NoWorkerId("every snowflake worker id (1,024) is leased by a running instance; set WORKER_ID");
  const workerId = taken.worker_id;
  let expiresAt = taken.expires_at.getTime();
  let released = false;
  const failures = new RepeatedFailure(log, `worker id ${workerId}'s lease not renewed`);
  const renew = async () => {
    try {
      const [row] = await db.$queryRaw<{ expires_at: Date }[]>`
        UPDATE worker_leases SET expires_at = now() + make_interval(secs => ${leaseSeconds})
        WHERE worker_id = ${workerId} AND owner = ${owner} RETURNING expires_at`;
      if (row) {
        expiresAt = row.expires_at.getTime();
        failures.succeeded();
      } else if (!released) return onLost(); // taken over: the lease had expired
    } catch (err) {
      failures.failed(err);
    }
    if (!released && Date.now() >= expiresAt) onLost();
  };
  const timer = setInterval(() => void renew(), (leaseSeconds * 1000) / 4);
  timer.unref();
  return {
    workerId,
    async release() {
      released = true;
      clearInterval(timer);
      await db.$executeRaw`
        UPDATE worker_leases SET owner = NULL, expires_at = now() WHERE worker_id = ${workerId} AND owner = ${owner}`;
    },
  };
}
