// The social graph (docs/accounts.md#follows): follows, follow requests to locked accounts,
// blocks and mutes. Counters on accounts move in the same transaction as the rows they count.
import { type Prisma, uniqueViolation } from "../../db/client.ts";
import { findPublicAccount, PUBLIC_ACCOUNT_SELECT, type PublicAccount } from "../accounts/service.ts";
import type { Context, Federator, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { silencedAccount } from "../instances/silence.ts";
import { notify } from "../notifications/notify.ts";
import { parseBeforeId } from "../paging.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";

type Tx = Prisma.TransactionClient;

export async function isBlocking(db: Pick<Tx, "block">, blockerId: bigint, blockedId: bigint): Promise<boolean> {
  return (await db.block.count({ where: { blockerId, blockedId } })) > 0;
}

async function addFollow(tx: Tx, followerId: bigint, followeeId: bigint): Promise<void> {
  await tx.follow.create({ data: { followerId, followeeId } });
  await moveFollowCounters(tx, followerId, followeeId, 1);
}

/**
 * Both counters of a follow in one statement, which locks the two rows in id order: A following
 * B while B follows A would otherwise lock them in opposite orders and deadlock.
 */
async function moveFollowCounters(tx: Tx, followerId: bigint, followeeId: bigint, by: 1 | -1): Promise<void> {
  await tx.$executeRaw`
    UPDATE accounts SET
      following_count = following_count + CASE WHEN id = ${followerId} THEN ${by}::int ELSE 0 END,
      followers_count = followers_count + CASE WHEN id = ${followeeId} THEN ${by}::int ELSE 0 END
    WHERE id IN (SELECT id FROM accounts WHERE id IN (${followerId}, ${followeeId}) ORDER BY id FOR NO KEY UPDATE)`;
}

/** Removes a follow if there is one; true when there was. */
async function removeFollow(tx: Tx, followerId: bigint, followeeId: bigint): Promise<boolean> {
  const { count } = await tx.follow.deleteMany({ where: { followerId, followeeId } });
  if (count === 0) return false;
  await moveFollowCounters(tx, followerId, followeeId, -1);
  return true;
}

async function target(ctx: Context, nameOrId: string): Promise<{ caller: CallerAccount; other: PublicAccount }> {
  const caller = requireAccount(ctx);
  const other = await findPublicAccount(ctx, nameOrId);
  if (other.id === caller.id) throw new DomainError("INVALID_REQUEST");
  return { caller, other };
}

/**
 * Follows an account; a locked one gets a request instead (`pending`). A remote account's server
 * answers every follow (docs/federation.md#follows): always a request, its `Follow` written to the
 * federation outbox with it, a follow when its `Accept` comes (remoteAnswered).
 */
export async function follow(ctx: Context, nameOrId: string): Promise<{ pending: boolean }> {
  const { caller, other } = await target(ctx, nameOrId);
  const remote = other.host !== null ? federatorOf(ctx) : undefined;
  const activityId = remote?.activityId(caller.id) ?? null;
  let result: { pending: boolean };
  try {
    result = await ctx.db.$transaction(async (tx) => {
      if (await isBlocking(tx, other.id, caller.id)) throw new DomainError("YOU_ARE_BLOCKED");
      const requested = await tx.followRequest.count({ where: { requesterId: caller.id, targetId: other.id } });
      if (requested) throw new DomainError("ALREADY_FOLLOWING");
      if (other.locked || remote) {
        if (await tx.follow.count({ where: { followerId: caller.id, followeeId: other.id } })) {
          throw new DomainError("ALREADY_FOLLOWING");
        }
        await tx.followRequest.create({
          data: { requesterId: caller.id, targetId: other.id, activityUri: activityId },
        });
        if (remote && activityId) {
          await remote.send(tx, { type: "follow", followerId: caller.id, followeeId: other.id, activityId });
        }
        if (!remote) await notify(ctx, tx, { recipientId: other.id, actorId: caller.id, type: "followRequested" });
        return { pending: true };
      }
      await addFollow(tx, caller.id, other.id);
      await notify(ctx, tx, { recipientId: other.id, actorId: caller.id, type: "followed" });
      return { pending: false };
    });
  } catch (err) {
    // A concurrent follow of the same pair got there first.
    if (uniqueViolation(err)) throw new DomainError("ALREADY_FOLLOWING");
    throw err;
  }
  return result;
}

/** Unfollows, or withdraws a pending request; a remote account's server is sent `Undo(Follow)`. */
export async function unfollow(ctx: Context, nameOrId: string): Promise<void> {
  const { caller, other } = await target(ctx, nameOrId);
  const remote = other.host !== null ? federatorOf(ctx) : undefined;
  await ctx.db.$transaction(async (tx) => {
    const followed = await removeFollow(tx, caller.id, other.id);
    const withdrawn = await tx.followRequest.findUnique({
      where: { requesterId_targetId: { requesterId: caller.id, targetId: other.id } },
    });
    const { count } = await tx.followRequest.deleteMany({ where: { requesterId: caller.id, targetId: other.id } });
    if (!followed && count === 0) throw new DomainError("YOU_ARE_NOT_FOLLOW_ACCOUNT");
    await remote?.send(tx, {
      type: "unfollow",
      followerId: caller.id,
      followeeId: other.id,
      activityId: withdrawn?.activityUri ?? null,
    });
  });
}

/** Federation, which an account of another server needs: found only when it is on (lookUp). */
function federatorOf(ctx: Context): Federator {
  if (!ctx.federation) throw new DomainError("ACCOUNT_NOT_FOUND");
  return ctx.federation;
}

export const FOLLOW_REQUESTS_PAGE = 100;

/**
 * Incoming follow requests, FOLLOW_REQUESTS_PAGE a page, by requester id newest first, paged by
 * `before_id` (a requester's id) as timelines are: how many others ask is not the caller's to
 * bound (it was cut at 1,000 without a way to the rest).
 */
export async function listFollowRequests(
  ctx: Context,
  beforeId?: string,
  /** At most FOLLOW_REQUESTS_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = FOLLOW_REQUESTS_PAGE,
): Promise<PublicAccount[]> {
  const caller = requireAccount(ctx);
  const before = parseBeforeId(beforeId);
  const requests = await ctx.db.followRequest.findMany({
    where: { targetId: caller.id, ...(before === undefined ? {} : { requesterId: { lt: before } }) },
    orderBy: { requesterId: "desc" },
    include: { requester: { select: PUBLIC_ACCOUNT_SELECT } },
    take: Math.min(limit, FOLLOW_REQUESTS_PAGE + 1),
  });
  return requests.map((r) => r.requester);
}

/** Accounts a page of followers or followings holds (docs/accounts.md#followers). */
export const FOLLOWS_PAGE = 40;

/**
 * An account's followers (`followers`) or the accounts it follows (`following`), newest follow
 * first, FOLLOWS_PAGE a page; `beforeId` is the last account of the page before, with the
 * timelines' paging rules. A locked account's lists are for itself and its followers.
 */
export async function followsOf(
  ctx: Context,
  nameOrId: string,
  side: "followers" | "following",
  beforeId?: string,
  /** At most FOLLOWS_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = FOLLOWS_PAGE,
): Promise<PublicAccount[]> {
  const viewer = optionalAccount(ctx);
  const account = await findPublicAccount(ctx, nameOrId);
  const before = parseBeforeId(beforeId);
  if (account.locked && viewer?.id !== account.id && !(viewer && (await isFollowing(ctx, viewer.id, account.id)))) {
    throw new DomainError("NO_PERMISSION");
  }
  // This account's side of a follow, and the other one's.
  const [own, other] =
    side === "followers" ? (["followeeId", "followerId"] as const) : (["followerId", "followeeId"] as const);
  let older: Prisma.FollowWhereInput = {};
  if (before !== undefined) {
    const cursor = await ctx.db.follow.findUnique({
      where: {
        followerId_followeeId:
          side === "followers"
            ? { followerId: before, followeeId: account.id }
            : { followerId: account.id, followeeId: before },
      },
    });
    // A before_id that is no follow of this account: nothing is older.
    if (!cursor) return [];
    older = { OR: [{ createdAt: { lt: cursor.createdAt } }, { createdAt: cursor.createdAt, [other]: { lt: before } }] };
  }
  const follows = await ctx.db.follow.findMany({
    where: { [own]: account.id, ...older },
    orderBy: [{ createdAt: "desc" }, { [other]: "desc" }],
    take: Math.min(limit, FOLLOWS_PAGE + 1),
    include: { follower: { select: PUBLIC_ACCOUNT_SELECT }, followee: { select: PUBLIC_ACCOUNT_SELECT } },
  });
  return follows.map((f) => (side === "followers" ? f.follower : f.followee));
}

async function isFollowing(ctx: Context, followerId: bigint, followeeId: bigint): Promise<boolean> {
  return (await ctx.db.follow.count({ where: { followerId, followeeId } })) > 0;
}

/** Accepts or rejects a follow request; a remote requester's server is sent `Accept` or `Reject`. */
export async function answerFollowRequest(ctx: Context, nameOrId: string, accept: boolean): Promise<void> {
  const caller = requireAccount(ctx);
  const requester = await findPublicAccount(ctx, nameOrId).catch(() => {
    throw new DomainError("FOLLOW_REQUEST_NOT_FOUND");
  });
  const remote = requester.host !== null ? federatorOf(ctx) : undefined;
  const answer = (activityId: string | null) =>
    ({ type: accept ? "accept" : "reject", followerId: requester.id, followeeId: caller.id, activityId }) as const;
  let activityId: string | null = null;
  try {
    await ctx.db.$transaction(async (tx) => {
      const request = await tx.followRequest.findUnique({
        where: { requesterId_targetId: { requesterId: requester.id, targetId: caller.id } },
      });
      const { count } = await tx.followRequest.deleteMany({
        where: { requesterId: requester.id, targetId: caller.id },
      });
      if (count === 0) throw new DomainError("FOLLOW_REQUEST_NOT_FOUND");
      activityId = request?.activityUri ?? null;
      await remote?.send(tx, answer(activityId));
      if (!accept) return;
      await addFollow(tx, requester.id, caller.id);
      if (requester.host === null) {
        await notify(ctx, tx, { recipientId: requester.id, actorId: caller.id, type: "followAccepted" });
      }
    });
  } catch (err) {
    if (!uniqueViolation(err)) throw err;
    // Already following (a concurrent accept won): the rolled-back request still has to go, and
    // a remote requester's server still asked.
    await ctx.db.$transaction(async (tx) => {
      await tx.followRequest.deleteMany({ where: { requesterId: requester.id, targetId: caller.id } });
      await remote?.send(tx, answer(activityId));
    });
  }
}

/**
 * Blocks an account: follows end both ways, and pending requests with them. Idempotent. A remote
 * account's server is sent `Block`, and ends them on its side.
 */
export async function block(ctx: Context, nameOrId: string): Promise<void> {
  const { caller, other } = await target(ctx, nameOrId);
  const remote = other.host !== null ? federatorOf(ctx) : undefined;
  await ctx.db.$transaction(async (tx) => {
    await blockIn(tx, caller.id, other.id);
    await remote?.send(tx, { type: "block", blockerId: caller.id, blockedId: other.id });
  });
}

async function blockIn(tx: Tx, blockerId: bigint, blockedId: bigint): Promise<void> {
  await tx.block.createMany({ data: [{ blockerId, blockedId }], skipDuplicates: true });
  await removeFollow(tx, blockerId, blockedId);
  await removeFollow(tx, blockedId, blockerId);
  await tx.followRequest.deleteMany({
    where: {
      OR: [
        { requesterId: blockerId, targetId: blockedId },
        { requesterId: blockedId, targetId: blockerId },
      ],
    },
  });
}

export async function unblock(ctx: Context, nameOrId: string): Promise<void> {
  const { caller, other } = await target(ctx, nameOrId);
  const remote = other.host !== null ? federatorOf(ctx) : undefined;
  await ctx.db.$transaction(async (tx) => {
    await tx.block.deleteMany({ where: { blockerId: caller.id, blockedId: other.id } });
    await remote?.send(tx, { type: "unblock", blockerId: caller.id, blockedId: other.id });
  });
}

// What a remote account's server says of the social graph (docs/federation.md#follows), called by
// src/federation/inbox.ts once the activity's signature names its actor. Each has the effect of
// once however often it comes.

/** What a remote account's `Follow` of a local account became, and so what it is answered. */
export type RemoteFollowOutcome = "followed" | "requested" | "refused";

/**
 * A remote account follows a local one: a follow (its Accept written to the federation outbox in
 * the same transaction), a request when the account is locked (answered later by
 * answerFollowRequest), or nothing when the local account blocks it (its Reject written). One
 * already followed is followed again: its server is told so once more. A Follow of no account
 * here is refused with nothing sent: no local account could sign the Reject.
 */
export async function remoteFollow(
  services: Services,
  followerId: bigint,
  followeeId: bigint,
  activityUri: string | null,
): Promise<RemoteFollowOutcome> {
  try {
    return await services.db.$transaction(async (tx) => {
      const answer = (type: "accept" | "reject") =>
        services.federation?.send(tx, { type, followerId, followeeId, activityId: activityUri });
      const followee = await tx.account.findUnique({ where: { id: followeeId, deletedAt: null, host: null } });
      if (!followee) return "refused";
      if (await isBlocking(tx, followeeId, followerId)) {
        await answer("reject");
        return "refused";
      }
      if (await tx.follow.count({ where: { followerId, followeeId } })) {
        await answer("accept");
        return "followed";
      }
      // A silenced server's account is heard only by its followers (docs/federation.md#moderation):
      // its follow or request is made, unannounced.
      const heard =
        !(await silencedAccount(services, followerId)) ||
        (await tx.follow.count({ where: { followerId: followeeId, followeeId: followerId } })) > 0;
      if (followee.locked) {
        await tx.followRequest.upsert({
          where: { requesterId_targetId: { requesterId: followerId, targetId: followeeId } },
          create: { requesterId: followerId, targetId: followeeId, activityUri },
          update: { activityUri },
        });
        if (heard)
          await notify(services, tx, { recipientId: followeeId, actorId: followerId, type: "followRequested" });
        return "requested";
      }
      await addFollow(tx, followerId, followeeId);
      if (heard) await notify(services, tx, { recipientId: followeeId, actorId: followerId, type: "followed" });
      await answer("accept");
      return "followed";
    });
  } catch (err) {
    // The same Follow handled at once twice: the other made the follow or the request.
    if (uniqueViolation(err)) return remoteFollow(services, followerId, followeeId, activityUri);
    throw err;
  }
}

/**
 * A remote account's server answers a local account's follow: `Accept` makes the request a follow,
 * `Reject` removes the request, or the follow it had accepted before. False when there was
 * nothing to answer.
 */
export async function remoteAnswered(
  services: Services,
  followerId: bigint,
  followeeId: bigint,
  accepted: boolean,
): Promise<boolean> {
  try {
    return await services.db.$transaction(async (tx) => {
      const { count } = await tx.followRequest.deleteMany({ where: { requesterId: followerId, targetId: followeeId } });
      if (!accepted) return (await removeFollow(tx, followerId, followeeId)) || count > 0;
      if (count === 0) return false;
      await addFollow(tx, followerId, followeeId);
      await notify(services, tx, { recipientId: followerId, actorId: followeeId, type: "followAccepted" });
      return true;
    });
  } catch (err) {
    // Followed already (the same Accept at once twice).
    if (uniqueViolation(err)) return false;
    throw err;
  }
}

/** A remote account's `Undo(Follow)`: its follow of a local account, or its request, ends. */
export async function remoteUnfollow(services: Services, followerId: bigint, followeeId: bigint): Promise<void> {
  await services.db.$transaction(async (tx) => {
    await removeFollow(tx, followerId, followeeId);
    await tx.followRequest.deleteMany({ where: { requesterId: followerId, targetId: followeeId } });
  });
}

/** A remote account's `Block` of a local account (follows end both ways), or its `Undo(Block)`. */
export async function remoteBlock(
  services: Services,
  blockerId: bigint,
  blockedId: bigint,
  blocking: boolean,
): Promise<void> {
  // Only a local account is another server's to block here.
  if (!(await services.db.account.count({ where: { id: blockedId, host: null, deletedAt: null } }))) return;
  if (blocking) await services.db.$transaction((tx) => blockIn(tx, blockerId, blockedId));
  else await services.db.block.deleteMany({ where: { blockerId, blockedId } });
}

/**
 * Mutes an account (docs/accounts.md#mutes): its notes leave the caller's feeds and it causes the
 * caller no notifications (src/domain/notes/visibility.ts unmuted, the one rule). Nothing else
 * changes, and nobody but the caller can tell. Idempotent.
 */
export async function mute(ctx: Context, nameOrId: string): Promise<void> {
  const { caller, other } = await target(ctx, nameOrId);
  await ctx.db.mute.createMany({ data: [{ muterId: caller.id, mutedId: other.id }], skipDuplicates: true });
}

export async function unmute(ctx: Context, nameOrId: string): Promise<void> {
  const { caller, other } = await target(ctx, nameOrId);
  await ctx.db.mute.deleteMany({ where: { muterId: caller.id, mutedId: other.id } });
}
