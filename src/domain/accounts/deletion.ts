// Account deletion (docs/accounts.md#deletion). The account becomes unusable in one short
// transaction: marked deleted and frozen (so the one visibility rule hides its notes from every
// timeline, search and stream at once), emptied of its personal data, its sessions ended, its notes
// queued for removal from Meilisearch. The row stays as a tombstone that keeps the name reserved.
// The rest (notes, reactions, follows, files...) is removed by a job in batches of
// ACCOUNT_DELETION_BATCH rows per transaction, so that an account with 100,000 notes holds no
// transaction for minutes: an `account_deletions` row leased by whichever instance runs it (SKIP
// LOCKED), renewed by every batch, and taken up again by any instance once the lease of one that
// stopped (a crash) has expired.
import { randomUUID } from "node:crypto";
import os from "node:os";
import { Prisma } from "../../db/client.ts";
import { RepeatedFailure } from "../../log.ts";
import type { Context, Services } from "../context.ts";
import { thumbnailKey } from "../drive/service.ts";
import { DomainError } from "../errors.ts";
import { recordSearchChange, searchIndexedSql } from "../search/outbox.ts";
import { requireAccount, roleRank } from "../sessions/caller.ts";
import { accountDeleted } from "./federation.ts";
import { verifyPassphrase } from "./passphrase.ts";
import { findAccount } from "./service.ts";

type Tx = Prisma.TransactionClient;

const LEASE_SECONDS = 60;
/** Batches the DELETE request runs itself: a small account is gone before the answer. */
export const INLINE_BATCHES = 10;
/** How often an idle worker looks for deletions left by others (a crashed instance's). */
const POLL_MS = 10_000;

/**
 * DELETE /accounts/{name}: the owner, with its passphrase (else NO_PERMISSION, also for an
 * admin deleting itself: a stolen token alone cannot), or an admin, for an account of a lower
 * role (the rule of freezing). The account is unusable when this returns; what is left after
 * INLINE_BATCHES batches is removed by the deletion job.
 */
export async function deleteAccount(ctx: Context, nameOrId: string, passphrase?: string): Promise<void> {
  const caller = requireAccount(ctx);
  const target = await findAccount(ctx, nameOrId);
  if (target.id === caller.id) {
    if (passphrase === undefined || !(await verifyPassphrase(passphrase, target.passphraseHash))) {
      throw new DomainError("NO_PERMISSION");
    }
  } else if (caller.role !== "admin" || roleRank(target) >= roleRank(caller)) {
    throw new DomainError("NO_PERMISSION");
  }
  await markDeleted(ctx, target.id);
  await runDeletions(ctx, { accountId: target.id, maxBatches: INLINE_BATCHES });
}

/** Operator command: deletes an account whatever its role, and waits until nothing of it is left. */
export async function deleteAccountNow(services: Services, nameOrId: string): Promise<bigint> {
  const target = await findAccount(services, nameOrId);
  await markDeleted(services, target.id);
  await runDeletions(services, { accountId: target.id });
  return target.id;
}

/**
 * A remote account whose server says it is deleted (its `Delete`, docs/federation.md#remote-accounts):
 * removed here as a local deletion removes it. Deleting it again does nothing.
 */
export async function deleteRemoteAccount(services: Services, accountId: bigint): Promise<void> {
  try {
    await markDeleted(services, accountId);
  } catch (err) {
    if (err instanceof DomainError && err.code === "ACCOUNT_NOT_FOUND") return;
    throw err;
  }
  await runDeletions(services, { accountId, maxBatches: INLINE_BATCHES });
}

/**
 * The one transaction that makes the account unusable. ACCOUNT_NOT_FOUND when another deletion
 * got there first.
 */
async function markDeleted(services: Services, accountId: bigint): Promise<void> {
  await services.db.$transaction(async (tx) => {
    // The e-mail is personal data and goes; the name stays, reserved (its key is unique).
    const email = `deleted-${accountId}@deleted.invalid`;
    const { count } = await tx.account.updateMany({
      where: { id: accountId, deletedAt: null },
      data: {
        deletedAt: new Date(),
        frozen: true,
        tokensValidFrom: new Date(),
        email,
        emailKey: email,
        passphraseHash: "",
        bio: "",
        locked: false,
        verified: false,
        avatarFileId: null,
        headerFileId: null,
      },
    });
    if (count === 0) throw new DomainError("ACCOUNT_NOT_FOUND");
    await tx.$executeRaw`UPDATE accounts SET nickname = name WHERE id = ${accountId}`;
    await tx.session.deleteMany({ where: { accountId } });
    await tx.emailToken.deleteMany({ where: { accountId } });
    await tx.accountDeletion.create({ data: { accountId } });
    // Its Delete is signed with its keys, which stay (docs/federation.md, "Keys of a deleted account").
    await accountDeleted(services, tx, accountId);
    // Searches hide its notes already (the visibility rule); Meilisearch forgets them too.
    await tx.$executeRaw`
      INSERT INTO search_outbox (op, target_id) SELECT 'remove', id FROM notes
      WHERE author_id = ${accountId} AND ${searchIndexedSql(services)}`;
  });
}

export interface RunOptions {
  /** Only this account's deletion (the request that asked for it). */
  accountId?: bigint;
  /** Stop after this many batches and give the lease back (the job goes on elsewhere or later). */
  maxBatches?: number;
  /**
   * With maxBatches: keep the lease instead of giving it back, as an instance that died would
   * (tests: nobody takes the job before the lease expires).
   */
  abandon?: boolean;
  /** Checked between batches: true stops the run, the lease given back (a shutdown). */
  stopping?: () => boolean;
}

export interface RunResult {
  /** Deletions finished. */
  finished: number;
  /** Transactions run. */
  batches: number;
}

/**
 * Runs pending deletions whose lease is free or expired, one at a time, until none is left (or
 * maxBatches). Any instance may run it at once: each deletion is leased by one.
 */
export async function runDeletions(services: Services, options: RunOptions = {}): Promise<RunResult> {
  const owner = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  const result: RunResult = { finished: 0, batches: 0 };
  for (;;) {
    const only = options.accountId === undefined ? Prisma.empty : Prisma.sql`AND account_id = ${options.accountId}`;
    const [claimed] = await services.db.$queryRaw<{ account_id: bigint }[]>`
      UPDATE account_deletions SET lease_owner = ${owner}, lease_until = now() + make_interval(secs => ${LEASE_SECONDS})
      WHERE account_id = (
        SELECT account_id FROM account_deletions WHERE lease_until <= now() ${only}
        ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING account_id`;
    if (!claimed) return result;
    const accountId = claimed.account_id;
    for (;;) {
      if ((options.maxBatches !== undefined && result.batches >= options.maxBatches) || options.stopping?.()) {
        if (!options.abandon) {
          await services.db.accountDeletion.updateMany({
            where: { accountId, leaseOwner: owner },
            data: { leaseOwner: null, leaseUntil: new Date() },
          });
        }
        return result;
      }
      result.batches += 1;
      const done = await runBatch(services, accountId, owner);
      if (done) {
        result.finished += 1;
        services.log.info({ accountId: accountId.toString() }, "account deleted");
        break;
      }
    }
    if (options.accountId !== undefined) return result;
  }
}

class LeaseLost extends Error {}

/**
 * One step of a deletion: the stored bytes of files already deleted, or else one transaction
 * removing up to a batch of rows, kind after kind. When every kind ran out within the batch (a
 * small account: all of it in one transaction) and no bytes wait, the job ends in the same
 * transaction. True when it did.
 */
async function runBatch(services: Services, accountId: bigint, owner: string): Promise<boolean> {
  const limit = services.config.accountDeletionBatch;
  // Bytes go after their rows: the rows' transaction wrote these keys, committed.
  const removals = await services.db.storedFileRemoval.findMany({ where: { accountId }, take: limit });
  if (removals.length) {
    await renewLease(services.db, accountId, owner);
    for (const { key } of removals) await services.storage.delete(key);
    await services.db.storedFileRemoval.deleteMany({ where: { key: { in: removals.map((r) => r.key) } } });
    return false;
  }
  try {
    return await services.db.$transaction(
      async (tx) => {
        await renewLease(tx, accountId, owner);
        // A transaction that wrote a row naming the account (a follow begun before the account was
        // marked) holds a key-share lock on it until it commits: wait for it, so its row is seen
        // here, and hold off new ones until this batch is done.
        await tx.$queryRaw`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`;
        let budget = limit;
        for (const step of STEPS) {
          budget -= await step(tx, accountId, budget, services);
          // This kind may have more: the next batch goes on from it.
          if (budget <= 0) return false;
        }
        // Files deleted here: their bytes go once this commits, and the job ends after them.
        if (await tx.storedFileRemoval.count({ where: { accountId } })) return false;
        // Nothing left: what remains is the tombstone, and the few rows only it has.
        await tx.announcementRead.deleteMany({ where: { accountId } });
        await tx.session.deleteMany({ where: { accountId } });
        await tx.emailToken.deleteMany({ where: { accountId } });
        await tx.accountDeletion.delete({ where: { accountId } });
        // The tombstone has no notes left to hide: out of the frozen accounts every statement
        // that reads notes hashes (visibility.ts unfrozenSql), which would otherwise grow with
        // every account ever deleted. deleted_at keeps it unusable.
        await tx.account.update({ where: { id: accountId }, data: { frozen: false } });
        return true;
      },
      { timeout: 120_000 },
    );
  } catch (err) {
    if (err instanceof LeaseLost) {
      services.log.warn({ accountId: accountId.toString() }, "account deletion lease lost: another instance goes on");
    }
    throw err;
  }
}

async function renewLease(db: Pick<Tx, "$executeRaw">, accountId: bigint, owner: string): Promise<void> {
  const renewed = await db.$executeRaw`
    UPDATE account_deletions SET lease_until = now() + make_interval(secs => ${LEASE_SECONDS})
    WHERE account_id = ${accountId} AND lease_owner = ${owner}`;
  if (renewed === 0) throw new LeaseLost();
}

type Step = (tx: Tx, accountId: bigint, limit: number, services: Services) => Promise<number>;

/**
 * A step that deletes at most `limit` rows of `table` whose `column` names the account; `other`
 * is the rest of the table's key (names of ours, never input).
 */
const rowsNaming =
  (table: string, column: string, other: string): Step =>
  (tx, accountId, limit) =>
    tx.$executeRawUnsafe(
      `DELETE FROM ${table} WHERE ${column} = $1 AND ${other} IN (SELECT ${other} FROM ${table} WHERE ${column} = $1 LIMIT $2)`,
      accountId,
      limit,
    );

/**
 * Locks accounts in id order before their counters move: follows and unfollows lock their two
 * accounts in id order too (src/domain/social/service.ts), so neither waits on the other in a circle.
 */
async function lockAccounts(tx: Tx, ids: bigint[]): Promise<void> {
  await tx.$queryRaw`SELECT id FROM accounts WHERE id = ANY(${ids}) ORDER BY id FOR NO KEY UPDATE`;
}

const STEPS: Step[] = [
  // Its notes, with the effects of deleting a note (notes/service.ts deleteNote): plain renotes
  // go too, quotes and replies stay; attachments, reactions (counts by triggers) and bookmarks
  // cascade; streams hear `delete` (the notes_live_deleted trigger).
  async (tx, accountId, limit, services) => {
    const own = await tx.$queryRaw<{ id: bigint }[]>`
      SELECT id FROM notes WHERE author_id = ${accountId} ORDER BY id LIMIT ${limit} FOR UPDATE`;
    if (own.length === 0) return 0;
    const ids = own.map((n) => n.id);
    const renotes = await tx.$queryRaw<{ id: bigint }[]>`
      SELECT r.id FROM notes r WHERE r.renote_id = ANY(${ids}) AND r.content = '' AND r.author_id <> ${accountId}
        AND NOT EXISTS (SELECT 1 FROM note_attachments t WHERE t.note_id = r.id)`;
    const others = renotes.map((n) => n.id);
    const gone = [...ids, ...others];
    await tx.$executeRaw`
      UPDATE accounts a SET notes_count = a.notes_count - g.n
      FROM (SELECT author_id, count(*)::int AS n FROM notes WHERE id = ANY(${gone}) GROUP BY author_id) g
      WHERE a.id = g.author_id`;
    await tx.$executeRaw`DELETE FROM notes WHERE id = ANY(${gone})`;
    await recordSearchChange(services, tx, "remove", others);
    return ids.length;
  },
  // Its reactions (note_reaction_counts follow by trigger) and bookmarks.
  rowsNaming("reactions", "account_id", "note_id"),
  rowsNaming("bookmarks", "account_id", "note_id"),
  // Whom it follows (their followers_count drops), then who follows it (their following_count).
  followsNaming("follower_id", "followee_id"),
  followsNaming("followee_id", "follower_id"),
  rowsNaming("follow_requests", "requester_id", "target_id"),
  rowsNaming("follow_requests", "target_id", "requester_id"),
  rowsNaming("blocks", "blocker_id", "blocked_id"),
  rowsNaming("blocks", "blocked_id", "blocker_id"),
  rowsNaming("mutes", "muter_id", "muted_id"),
  rowsNaming("mutes", "muted_id", "muter_id"),
  // Lists others put it in, then its own lists (their assignees with them).
  rowsNaming("list_members", "account_id", "list_id"),
  (tx, accountId, limit) => tx.$executeRaw`
    DELETE FROM lists WHERE id IN (SELECT id FROM lists WHERE owner_id = ${accountId} LIMIT ${limit})`,
  // Notifications it received and those it caused.
  (tx, accountId, limit) => tx.$executeRaw`
    DELETE FROM notifications WHERE id IN (
      SELECT id FROM notifications WHERE recipient_id = ${accountId} LIMIT ${limit})`,
  (tx, accountId, limit) => tx.$executeRaw`
    DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE actor_id = ${accountId} LIMIT ${limit})`,
  // Its drive files: the rows now, their bytes once this commits (stored_file_removals).
  async (tx, accountId, limit) => {
    const files = await tx.$queryRaw<{ id: bigint; thumbnail_size: number | null }[]>`
      DELETE FROM drive_files WHERE id IN (SELECT id FROM drive_files WHERE owner_id = ${accountId} LIMIT ${limit})
      RETURNING id, thumbnail_size`;
    if (files.length === 0) return 0;
    const keys = files.flatMap((f) =>
      f.thumbnail_size === null ? [f.id.toString()] : [f.id.toString(), thumbnailKey(f.id)],
    );
    await tx.storedFileRemoval.createMany({ data: keys.map((key) => ({ key, accountId })), skipDuplicates: true });
    return files.length;
  },
];

/**
 * A step that deletes at most `limit` follows whose `column` is the account, and moves the
 * counters of both sides: the account's own by the number gone, each other account's by one.
 */
function followsNaming(column: "follower_id" | "followee_id", other: "follower_id" | "followee_id"): Step {
  const [own, others] =
    column === "follower_id" ? ["following_count", "followers_count"] : ["followers_count", "following_count"];
  return async (tx, accountId, limit) => {
    const gone = await tx.$queryRawUnsafe<{ id: bigint }[]>(
      `DELETE FROM follows WHERE ${column} = $1 AND ${other} IN (SELECT ${other} FROM follows WHERE ${column} = $1 LIMIT $2)
       RETURNING ${other} AS id`,
      accountId,
      limit,
    );
    if (gone.length === 0) return 0;
    const ids = gone.map((g) => g.id);
    await lockAccounts(tx, [accountId, ...ids]);
    await tx.$executeRawUnsafe(`UPDATE accounts SET ${others} = ${others} - 1 WHERE id = ANY($1)`, ids);
    await tx.$executeRawUnsafe(`UPDATE accounts SET ${own} = ${own} - $1::int WHERE id = $2`, ids.length, accountId);
    return ids.length;
  };
}

export interface DeletionWorker {
  /** Looks for work now (a deletion just left unfinished by a request). */
  kick(): void;
  stop(): Promise<void>;
}

/**
 * The background job of this instance: at start (deletions a crash left), then every POLL_MS
 * and when kicked, it runs every deletion whose lease is free or expired.
 */
export function startDeletionWorker(services: Services): DeletionWorker {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const failures = new RepeatedFailure(services.log, "account deletions interrupted; they go on later");
  const run = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = runDeletions(services, { stopping: () => stopped })
      .then(() => failures.succeeded())
      .catch((err) => failures.failed(err, "error"))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  };
  const timer = setInterval(run, POLL_MS);
  timer.unref();
  run();
  return {
    kick: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
