// Idempotency-Key (CONTRACT 10, extension) on REST and GraphQL mutations alike: the first answer for an
// (account or IP, key) pair is kept 24 hours; a replay with the same method, path and body gets
// it back without acting twice; the same key with another method, path or body is 409
// IDEMPOTENCY_KEY_REUSED. A replay that arrives while the first request runs waits for it.
// An upload is fingerprinted by its fields and the SHA-256 of its file, taken as it streams;
// GraphQL requests by their JSON body, their uploads by the files' SHA-256.
import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Db } from "../db/client.ts";
import type { Caller, Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { RepeatedFailure } from "../log.ts";

const LIFETIME_MS = 24 * 60 * 60 * 1000;
const WAIT_MS = 10_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The JSON body as sent, or undefined for none. */
  body?: string;
}

export type Idempotency =
  | { replay: StoredAnswer }
  | {
      /** Keeps the answer for replays; a server error (5xx) is not kept, so it may be retried. */
      record(answer: StoredAnswer): Promise<void>;
      /** Releases the key without an answer. */
      abandon(): Promise<void>;
    };

const MUTATIONS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Claims the request's Idempotency-Key, or answers what a first request with it answered. */
export async function beginIdempotent(
  services: Services,
  caller: Caller,
  request: FastifyRequest,
  /** What identifies the body; the parsed JSON body when not given. */
  body: unknown = request.body,
): Promise<Idempotency | undefined> {
  const header = request.headers["idempotency-key"];
  if (header === undefined || !MUTATIONS.has(request.method)) return undefined;
  const key = Array.isArray(header) ? header.join(",") : header;
  if (!KEY.test(key)) throw new DomainError("INVALID_REQUEST");
  const owner = caller.account ? `account:${caller.account.id}` : `ip:${request.ip}`;
  const path = request.url.replace(/\/+(\?|$)/, "$1");
  const fingerprint = createHash("sha256")
    .update(`${request.method} ${path}\n${JSON.stringify(body ?? null)}`)
    .digest("hex");
  const where = { owner_key: { owner, key } };
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    await services.db.idempotencyRecord.deleteMany({
      where: { owner, key, createdAt: { lt: new Date(Date.now() - LIFETIME_MS) } },
    });
    const claimed = await services.db.idempotencyRecord.createMany({
      data: [{ owner, key, fingerprint }],
      skipDuplicates: true,
    });
    if (claimed.count === 1) {
      const abandon = async () => {
        await services.db.idempotencyRecord.deleteMany({ where: { owner, key, status: null } });
      };
      return {
        record: async (answer) => {
          if (answer.status >= 500) return abandon();
          await services.db.idempotencyRecord.update({
            where,
            data: {
              status: answer.status,
              headers: answer.headers as Prisma.InputJsonValue,
              body: answer.body ?? null,
            },
          });
        },
        abandon,
      };
    }
    const first = await services.db.idempotencyRecord.findUnique({ where });
    if (!first) continue; // it just expired or was abandoned: claim it again
    if (first.fingerprint !== fingerprint) throw new DomainError("IDEMPOTENCY_KEY_REUSED");
    if (first.status !== null) {
      return {
        replay: {
          status: first.status,
          headers: (first.headers ?? {}) as Record<string, string>,
          body: first.body ?? undefined,
        },
      };
    }
    if (Date.now() > deadline) throw new DomainError("SERVICE_UNAVAILABLE");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The answer a first request with the same Idempotency-Key got, marked as a replay. */
export function replay(reply: FastifyReply, answer: StoredAnswer) {
  reply.code(answer.status).headers({ ...answer.headers, "idempotent-replayed": "true" });
  if (answer.body === undefined) return reply.send();
  if (!reply.hasHeader("content-type")) reply.type("application/json; charset=utf-8");
  return reply.send(answer.body);
}

/** The advisory lock the sweep takes, batch by batch, so that one instance sweeps at a time. */
export const IDEMPOTENCY_SWEEP_LOCK = 0x6d75726d_0001n;
const SWEEP_BATCH = 1000;
const SWEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * Deletes the records past their 24 hours (a key is free again then anyway), `batch` at a time,
 * each batch a short transaction of its own so that no long lock or transaction holds the table.
 * Another instance sweeping (it holds the lock) is left to it. Returns how many were deleted.
 */
export async function sweepIdempotencyRecords(db: Db, options: { now?: Date; batch?: number } = {}): Promise<number> {
  const cutoff = new Date((options.now ?? new Date()).getTime() - LIFETIME_MS);
  const batch = options.batch ?? SWEEP_BATCH;
  let deleted = 0;
  for (;;) {
    const count = await db.$transaction(async (tx) => {
      const [{ locked }] = await tx.$queryRaw<{ locked: boolean }[]>`
        SELECT pg_try_advisory_xact_lock(${IDEMPOTENCY_SWEEP_LOCK}) AS locked`;
      if (!locked) return undefined;
      // Oldest first, by the created_at index; rows a request is updating are left for later.
      return tx.$executeRaw`
        DELETE FROM idempotency_records
        WHERE (owner, key) IN (
          SELECT owner, key FROM idempotency_records
          WHERE created_at < ${cutoff}
          ORDER BY created_at
          LIMIT ${batch}
          FOR UPDATE SKIP LOCKED)`;
    });
    if (count === undefined) return deleted;
    deleted += count;
    if (count < batch) return deleted;
  }
}

export interface IdempotencySweep {
  stop(): Promise<void>;
}

/** Sweeps now and then (hourly, the first a minute after start): the table holds a day at most. */
export function startIdempotencySweep(
  services: Pick<Services, "db" | "log">,
  options: { everyMs?: number; firstAfterMs?: number } = {},
): IdempotencySweep {
  let running: Promise<void> | undefined;
  let stopped = false;
  const failures = new RepeatedFailure(services.log, "idempotency records not swept");
  const sweep = () => {
    if (running || stopped) return;
    running = sweepIdempotencyRecords(services.db)
      .then((deleted) => {
        failures.succeeded();
        if (deleted) services.log.info({ deleted }, "idempotency records past 24 hours deleted");
      })
      .catch((err) => failures.failed(err))
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(sweep, options.firstAfterMs ?? 60_000);
  const every = setInterval(sweep, options.everyMs ?? SWEEP_EVERY_MS);
  first.unref();
  every.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(every);
      await running;
    },
  };
}
