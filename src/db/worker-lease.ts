// Snowflake worker ids leased from PostgreSQL (docs/fleet.md#worker-ids), for instances started
// without WORKER_ID: each takes a free id at start, renews its lease while it runs and gives it
// back at shutdown. An id is taken again only once its lease has expired, the least recently used
// first. An instance that could not renew before its lease expired (the database out of reach), or
// whose id was taken over, mints no id (writes answer 503) until it holds one again: its own if
// still free, else any free one. It keeps running meanwhile, since the database is someone else's
// to bring back (README, Running several instances).
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import { RepeatedFailure } from "../log.ts";
import type { Db } from "./client.ts";

export const LEASE_SECONDS = 60;

export class NoWorkerId extends Error {}

export interface WorkerLease {
  /** The worker id last held: at start, the one taken. */
  readonly workerId: number;
  /**
   * The worker id ids may be minted with now; undefined while none is held (its lease expired
   * unrenewed or was taken over, and no other is leased yet).
   */
  current(): number | undefined;
  /** Gives the id back (at shutdown: no more ids are minted). */
  release(): Promise<void>;
}

const NO_FREE_ID = "every snowflake worker id (1,024) is leased by a running instance; set WORKER_ID";

/** Takes a free worker id; NoWorkerId when all 1,024 are held by live instances. */
export async function leaseWorkerId(db: Db, log: Logger, leaseSeconds = LEASE_SECONDS): Promise<WorkerLease> {
  const leaseMs = leaseSeconds * 1000;
  const owner = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  const take = async (): Promise<number | undefined> => {
    // SKIP LOCKED: instances starting at once each take another row.
    const [taken] = await db.$queryRaw<{ worker_id: number }[]>`
      UPDATE worker_leases SET owner = ${owner}, expires_at = now() + make_interval(secs => ${leaseSeconds})
      WHERE worker_id = (
        SELECT worker_id FROM worker_leases WHERE expires_at < now()
        ORDER BY expires_at, worker_id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING worker_id`;
    return taken?.worker_id;
  };
  const renew = async (workerId: number): Promise<boolean> => {
    // Renewed even once expired, as long as no other instance took it: the row is still this one's.
    const rows = await db.$executeRaw`
      UPDATE worker_leases SET expires_at = now() + make_interval(secs => ${leaseSeconds})
      WHERE worker_id = ${workerId} AND owner = ${owner}`;
    return rows === 1;
  };

  const sent = Date.now();
  const first = await take();
  if (first === undefined) throw new NoWorkerId(NO_FREE_ID);
  // The row's worker id (undefined once taken over), and until when it is this instance's: from
  // when the statement that renewed it was sent, by this process's clock, so that a database
  // whose clock runs ahead cannot make the lease look longer than it is.
  let held: number | undefined = first;
  let last = first;
  let heldUntil = sent + leaseMs;
  let lost = false;
  let released = false;
  let running: Promise<void> | undefined;
  let failures = new RepeatedFailure(log, "the snowflake worker id's lease not renewed");
  let expiry: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;

  const lose = (workerId: number, what: string) => {
    if (lost) return;
    lost = true;
    log.error({ workerId }, `${what}: no ids are minted (writes answer 503) until a worker id is leased again`);
  };
  /**
   * Says the lease is lost once it has expired unrenewed. A timer may fire before Date.now()
   * reaches its time (libuv arms it from the event loop's clock, read at the start of the loop's
   * turn): then it is armed again for what is left, else the loss went unsaid (CI: the outage
   * test waited 20 s for it).
   */
  const checkExpiry = () => {
    if (held === undefined) return;
    const left = heldUntil - Date.now();
    if (left > 0) {
      clearTimeout(expiry);
      expiry = setTimeout(checkExpiry, left);
      expiry.unref();
      return;
    }
    lose(held, `worker id ${held}'s lease expired before it could be renewed`);
  };
  const holds = (workerId: number, since: number) => {
    const previous = last;
    held = workerId;
    last = workerId;
    heldUntil = since + leaseMs;
    clearTimeout(expiry);
    // Renewed too late to count (the statement took longer than the lease): not held.
    if (Date.now() >= heldUntil) return checkExpiry();
    checkExpiry();
    if (!lost) return failures.succeeded();
    lost = false;
    // The loss was said; from now on a failure is a new one.
    failures = new RepeatedFailure(log, "the snowflake worker id's lease not renewed");
    log.info(
      { workerId },
      `holding worker id ${workerId} ${workerId === previous ? "again" : `(in place of ${previous})`}: ids are minted again`,
    );
  };
  const attempt = async () => {
    const since = Date.now();
    if (held !== undefined) {
      const workerId = held;
      if (await renew(workerId)) return holds(workerId, since);
      held = undefined;
      lose(workerId, `worker id ${workerId} was taken by another instance (its lease had expired)`);
    }
    const taken = await take();
    if (taken === undefined) failures.failed(new NoWorkerId(NO_FREE_ID), "error");
    else holds(taken, since);
  };
  // Renewed every quarter of the lease; while none is held, tried every second (at most).
  const schedule = () => {
    if (released) return;
    const renewing = held !== undefined && !lost;
    timer = setTimeout(tick, renewing ? leaseMs / 4 : Math.min(1000, leaseMs / 4));
    timer.unref();
  };
  const tick = () => {
    running = attempt()
      .catch((err) => failures.failed(err, "warn", { workerId: held ?? last }))
      .finally(() => {
        running = undefined;
        schedule();
      });
  };
  holds(first, sent);
  schedule();

  return {
    get workerId() {
      return last;
    },
    current: () => (held !== undefined && !lost && Date.now() < heldUntil ? held : undefined),
    async release() {
      released = true;
      clearTimeout(timer);
      clearTimeout(expiry);
      await running;
      held = undefined;
      await db.$executeRaw`UPDATE worker_leases SET owner = NULL, expires_at = now() WHERE owner = ${owner}`;
    },
  };
}
