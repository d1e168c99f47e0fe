// Each running instance's lease in PostgreSQL (`instance_leases`), WORKER_ID set or not: taken at
// its first Idempotency-Key claim, renewed every quarter of INSTANCE_LEASE_SECONDS while the
// process lives, deleted at shutdown. Another instance goes by it to tell that the one behind a
// claim has died, so that the claim is free again (src/http/idempotency.ts). The instance's
// database sessions carry its id as their application_name, so that whoever takes a dead
// instance's claim over can end them first: a statement the dead instance left waiting on a lock
// would otherwise still commit, beside the fresh attempt.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { RepeatedFailure } from "../log.ts";
import type { Db } from "./client.ts";

export interface InstanceLease {
  readonly id: string;
  /** How long the lease lasts unrenewed. */
  readonly seconds: number;
  /**
   * Resolves once the lease has at least half its time left, renewed now if it had not (at the
   * first call, taken): a claim is only made under a lease that others still see alive.
   */
  held(): Promise<void>;
  /** Deletes the lease (at shutdown, requests done): whatever claim is left is free at once. */
  release(): Promise<void>;
}

export function newInstanceId(): string {
  return randomUUID();
}

/** The application_name of an instance's sessions (PostgreSQL keeps 63 bytes of it: enough). */
export function sessionName(instanceId: string): string {
  return `murmur ${instanceId}`;
}

/**
 * `databaseUrl` with the instance's sessions named for it (in place of any application_name it
 * had). A URL that does not parse as one is left as it is: the sessions are then not ended.
 */
export function withSessionName(databaseUrl: string, instanceId: string): string {
  try {
    const url = new URL(databaseUrl);
    url.searchParams.set("application_name", sessionName(instanceId));
    return url.toString();
  } catch {
    return databaseUrl;
  }
}

export function instanceLease(db: Db, log: Logger, id: string, seconds: number): InstanceLease {
  const leaseMs = seconds * 1000;
  // When the last renewal that succeeded was sent (this process's clock): the lease runs from
  // no earlier than that.
  let renewedAt = Number.NEGATIVE_INFINITY;
  let renewing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let released = false;
  const failures = new RepeatedFailure(log, `instance ${id}'s lease not renewed`);
  const renew = (): Promise<void> => {
    renewing ??= (async () => {
      const sent = Date.now();
      await db.$executeRaw`
        INSERT INTO instance_leases (instance_id, expires_at)
        VALUES (${id}, now() + make_interval(secs => ${seconds}))
        ON CONFLICT (instance_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`;
      if (sent - renewedAt > leaseMs && renewedAt !== Number.NEGATIVE_INFINITY) {
        log.error(
          { instance: id },
          "this instance's lease expired before it was renewed: Idempotency-Key requests it was running may have been run again by another instance",
        );
      }
      renewedAt = sent;
    })().finally(() => {
      renewing = undefined;
    });
    return renewing;
  };
  return {
    id,
    seconds,
    async held() {
      if (!timer && !released) {
        timer = setInterval(
          () =>
            void renew().then(
              () => failures.succeeded(),
              (err) => failures.failed(err),
            ),
          leaseMs / 4,
        );
        timer.unref();
      }
      if (Date.now() - renewedAt > leaseMs / 2) await renew();
    },
    async release() {
      released = true;
      clearInterval(timer);
      await renewing?.catch(() => {});
      if (renewedAt === Number.NEGATIVE_INFINITY) return;
      await db.$executeRaw`DELETE FROM instance_leases WHERE instance_id = ${id}`;
    },
  };
}

/** Deletes the leases that expired (instances that died): one that is gone counts so with or without its row. */
export async function deleteExpiredInstanceLeases(db: Db): Promise<number> {
  return db.$executeRaw`DELETE FROM instance_leases WHERE expires_at < now()`;
}
