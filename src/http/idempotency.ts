// Idempotency-Key (extension, docs/protection.md#idempotency) on REST and GraphQL mutations alike:
// the first answer for an (account or IP, key) pair is kept 24 hours; a replay with the same
// method, path and body gets it back without acting twice; the same key with another method, path
// or body is 409 IDEMPOTENCY_KEY_REUSED. A replay that arrives while the first request runs waits
// for it. An upload is fingerprinted by its fields and the SHA-256 of its file, taken as it
// streams; GraphQL requests by their JSON body, their uploads by the files' SHA-256. A claim names
// the instance running it (src/db/instance-lease.ts): when that instance dies before it answers,
// the claim is free again once its lease has expired, and the next replay runs the request afresh
// rather than waiting out the 24 hours.
import { createHash, type Hash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type Db, Prisma } from "../db/client.ts";
import { deleteExpiredInstanceLeases, sessionName } from "../db/instance-lease.ts";
import type { Caller, Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import { RepeatedFailure } from "../log.ts";
import { answerHeaders } from "./hop-by-hop.ts";

const LIFETIME_MS = 24 * 60 * 60 * 1000;
const WAIT_MS = 10_000;
const KEY = /^[\x21-\x7e]{1,255}$/;
/** How long ending a dead instance's session may take before its claim is left for a later replay. */
const END_SESSION_MS = 5_000;

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

/**
 * The SHA-256 of `${method} ${path}\n` and JSON.stringify(body)'s text, the text fed to the hash
 * piece by piece from a stack of its own: JSON.stringify recurses, and a body nested some
 * thousands deep (which the JSON parser takes) would overflow the call stack, a 500 where the same
 * body without a key gets the route's own answer.
 */
export function fingerprintOf(method: string, path: string, body: unknown): string {
  const hash = createHash("sha256").update(`${method} ${path}\n`);
  hashJson(hash, body ?? null);
  return hash.digest("hex");
}

type Step = { text: string } | { value: unknown };

/** What JSON.stringify writes, for the values a parsed body holds (and toJSON's, and undefined's). */
function hashJson(hash: Hash, root: unknown): void {
  const steps: Step[] = [{ value: root }];
  const absent = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";
  for (let step = steps.pop(); step; step = steps.pop()) {
    if ("text" in step) {
      hash.update(step.text);
      continue;
    }
    let value = step.value;
    const toJSON = (value as { toJSON?: unknown } | null)?.toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value);
    if (Array.isArray(value)) {
      hash.update("[");
      steps.push({ text: "]" });
      for (let i = value.length - 1; i >= 0; i--) {
        steps.push({ value: absent(value[i]) ? null : value[i] });
        if (i > 0) steps.push({ text: "," });
      }
    } else if (value !== null && typeof value === "object") {
      const members = Object.entries(value).filter(([, member]) => !absent(member));
      hash.update("{");
      steps.push({ text: "}" });
      for (let i = members.length - 1; i >= 0; i--) {
        steps.push({ value: members[i][1] });
        steps.push({ text: `${i > 0 ? "," : ""}${JSON.stringify(members[i][0])}:` });
      }
    } else {
      hash.update(JSON.stringify(value) ?? "null");
    }
  }
}

/**
 * Whether the claim of row `r` is left by an instance that is gone: its lease expired or deleted.
 * A claim from before claims named their instance counts as gone once older than a lease.
 */
const orphaned = (leaseSeconds: number) => Prisma.sql`
  NOT EXISTS (SELECT 1 FROM instance_leases i WHERE i.instance_id = r.claimed_by AND i.expires_at > now())
  AND (r.claimed_by IS NOT NULL OR r.created_at < now() - make_interval(secs => ${leaseSeconds}))`;

interface ClaimRow {
  fingerprint: string;
  status: number | null;
  headers: unknown;
  body: string | null;
  claimed_by: string | null;
  orphaned: boolean;
}

/** Whether the request asks to be idempotent: an Idempotency-Key on a method that writes. */
export function idempotencyAsked(request: FastifyRequest): boolean {
  return request.headers["idempotency-key"] !== undefined && MUTATIONS.has(request.method);
}

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
  const fingerprint = fingerprintOf(request.method, path, body);
  const { db, instance } = services;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    await db.idempotencyRecord.deleteMany({
      where: { owner, key, createdAt: { lt: new Date(Date.now() - LIFETIME_MS) } },
    });
    await instance.held();
    const claimed = await db.idempotencyRecord.createMany({
      data: [{ owner, key, fingerprint, claimedBy: instance.id }],
      skipDuplicates: true,
    });
    if (claimed.count === 1) return claimOf(services, owner, key);
    const [first] = await db.$queryRaw<ClaimRow[]>`
      SELECT fingerprint, status, headers, body, claimed_by, ${orphaned(instance.seconds)} AS orphaned
      FROM idempotency_records r WHERE owner = ${owner} AND key = ${key}`;
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
    if (
      first.orphaned &&
      first.claimed_by !== instance.id &&
      (await takeOver(services, owner, key, first.claimed_by))
    ) {
      return claimOf(services, owner, key);
    }
    if (Date.now() > deadline) throw new DomainError("SERVICE_UNAVAILABLE");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** This instance's claim of (owner, key): its answer kept, or the key released. */
function claimOf(services: Services, owner: string, key: string): Idempotency {
  // Not ours any more once taken over (this instance was taken for dead): the other's answer stands.
  const ours = { owner, key, status: null, claimedBy: services.instance.id };
  const abandon = async () => {
    await services.db.idempotencyRecord.deleteMany({ where: ours });
  };
  return {
    record: async (answer) => {
      if (answer.status >= 500) return abandon();
      await services.db.idempotencyRecord.updateMany({
        where: ours,
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

/**
 * Takes over a claim left by an instance that is gone, for a fresh attempt. Its database sessions
 * are ended first: a statement of the request it was running may still wait there (on a lock),
 * and would otherwise commit beside the fresh attempt. False when a session did not end in time,
 * or another replay took the claim first.
 */
async function takeOver(services: Services, owner: string, key: string, from: string | null): Promise<boolean> {
  const { db, instance } = services;
  if (from !== null) {
    const sessions = await db.$queryRaw<{ ended: boolean }[]>`
      SELECT pg_terminate_backend(pid, ${END_SESSION_MS}::bigint) AS ended
      FROM pg_stat_activity WHERE application_name = ${sessionName(from)} AND pid <> pg_backend_pid()`;
    if (sessions.some((session) => !session.ended)) return false;
  }
  await instance.held();
  const taken = await db.$executeRaw`
    UPDATE idempotency_records r SET claimed_by = ${instance.id}
    WHERE owner = ${owner} AND key = ${key} AND status IS NULL AND claimed_by IS NOT DISTINCT FROM ${from}
      AND ${orphaned(instance.seconds)}`;
  if (taken === 1) services.log.warn({ key, from }, "Idempotency-Key claim of an instance that is gone taken over");
  return taken === 1;
}

/**
 * The answer a first request with the same Idempotency-Key got, marked as a replay. Its framing
 * is this answer's own: GraphQL's multipart/mixed answers were kept with yoga's
 * `Transfer-Encoding: chunked` before test/framing.test.ts.
 */
export function replay(reply: FastifyReply, answer: StoredAnswer) {
  reply.code(answer.status).headers({ ...answerHeaders(answer.headers), "idempotent-replayed": "true" });
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

/**
 * Sweeps now and then (hourly, the first a minute after start): the table holds a day at most.
 * The leases of instances that are gone go too.
 */
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
      .then(async (deleted) => {
        await deleteExpiredInstanceLeases(services.db);
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
