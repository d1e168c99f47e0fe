// Follows whose answer was lost (docs/federation.md#follows): a local account's request to follow
// a remote account stays pending until the remote server's Accept comes, and an Accept can be
// lost (a server that dropped the Follow while it was down, or answered one it then failed to
// deliver). Such a request's Follow is sent again, with a new id (a server drops an activity id it
// has handled), 1 h, then 6 h, then 24 h after it last went; then it is left alone. The relay of
// every process that works the queue looks for due ones (src/federation/outbox.ts); each is
// claimed with FOR UPDATE SKIP LOCKED and its row moved on in the transaction that writes its
// Follow to the federation outbox, so it goes once across a fleet.
//
// An operator repairs one by hand (`murmur follow repair`): Undo(Follow) and then a new Follow,
// for a request still pending or for a follow the remote server has forgotten.
import { Prisma } from "../db/client.ts";
import { keyOf, remoteKeyOf, remoteNameOf } from "../domain/accounts/rules.ts";
import type { Federator, Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";

/** The waits before each resend of an unanswered Follow, from when it last went. */
export const FOLLOW_RESEND_AFTER_MS = [3_600_000, 6 * 3_600_000, 24 * 3_600_000] as const;

/** Requests looked at in one pass; the rest wait for the next. */
const PASS = 100;

interface Due {
  requester_id: bigint;
  target_id: bigint;
  /** Whether the request is this server's to send: a local account's, to a remote one still there. */
  ours: boolean;
}

function federatorOf(services: Pick<Services, "federation">): Pick<Federator, "activityId" | "send"> {
  if (!services.federation) throw new DomainError("INVALID_REQUEST", { detail: "FEDERATION=false: nothing to send" });
  return services.federation;
}

/**
 * Sends again the Follows due (at most a pass's), each once however many processes look; the
 * number sent.
 */
export async function resendLostFollows(
  services: Pick<Services, "db" | "federation">,
  afterMs: readonly number[] = FOLLOW_RESEND_AFTER_MS,
): Promise<number> {
  const federator = federatorOf(services);
  const [first, second, third] = afterMs.map((ms) => ms / 1000);
  return services.db.$transaction(async (tx) => {
    const due = await tx.$queryRaw<Due[]>(Prisma.sql`
      SELECT r.requester_id, r.target_id,
             (requester.host IS NULL AND target.host IS NOT NULL AND target.deleted_at IS NULL) AS ours
      FROM follow_requests r
      JOIN accounts requester ON requester.id = r.requester_id
      JOIN accounts target ON target.id = r.target_id
      WHERE r.resends < ${afterMs.length}
        AND r.sent_at <= now() - make_interval(secs => ${Math.min(first, second, third)})
        AND r.sent_at <= now() - make_interval(secs => CASE r.resends WHEN 0 THEN ${first}::float8
                                                                       WHEN 1 THEN ${second}::float8
                                                                       ELSE ${third}::float8 END)
      ORDER BY r.sent_at
      LIMIT ${PASS}
      FOR UPDATE OF r SKIP LOCKED`);
    let sent = 0;
    for (const row of due) {
      const where = { requesterId_targetId: { requesterId: row.requester_id, targetId: row.target_id } };
      if (!row.ours) {
        // Another server's request of a local account (its server sends), or one to an account now
        // gone: never looked at again.
        await tx.followRequest.update({ where, data: { resends: afterMs.length } });
        continue;
      }
      const activityId = federator.activityId(row.requester_id);
      await tx.followRequest.update({
        where,
        data: { activityUri: activityId, sentAt: new Date(), resends: { increment: 1 } },
      });
      await federator.send(tx, {
        type: "follow",
        followerId: row.requester_id,
        followeeId: row.target_id,
        activityId,
      });
      sent++;
    }
    return sent;
  });
}

export interface FollowRepair {
  /** Whether it is still a request (false: a follow the remote server is told of again). */
  pending: boolean;
  /** The new Follow's id. */
  activityId: string;
}

/**
 * Local account `localName`'s follow of (or request to follow) remote account `remoteHandle`, sent
 * again: Undo(Follow), naming the Follow last sent when known, then a new Follow, whose Accept
 * makes a pending request a follow. ACCOUNT_NOT_FOUND for either account unknown here,
 * YOU_ARE_NOT_FOLLOW_ACCOUNT when there is neither a follow nor a request.
 */
export async function repairFollow(
  services: Pick<Services, "db" | "federation" | "config">,
  localName: string,
  remoteHandle: string,
): Promise<FollowRepair> {
  const federator = federatorOf(services);
  const handle = remoteNameOf(remoteHandle.trim(), services.config.localHost);
  const [local, remote] = await Promise.all([
    services.db.account.findFirst({ where: { nameKey: keyOf(localName), host: null, deletedAt: null } }),
    handle &&
      services.db.account.findFirst({
        where: { nameKey: remoteKeyOf(handle.name, handle.host), host: { not: null }, deletedAt: null },
      }),
  ]);
  if (!local) throw new DomainError("ACCOUNT_NOT_FOUND", { detail: `no local account "${localName}"` });
  if (!remote) throw new DomainError("ACCOUNT_NOT_FOUND", { detail: `no remote account "${remoteHandle}" known here` });
  return services.db.$transaction(async (tx) => {
    const where = { requesterId_targetId: { requesterId: local.id, targetId: remote.id } };
    const [request] = await tx.$queryRaw<{ activity_uri: string | null }[]>`
      SELECT activity_uri FROM follow_requests WHERE requester_id = ${local.id} AND target_id = ${remote.id} FOR UPDATE`;
    const following = await tx.follow.count({ where: { followerId: local.id, followeeId: remote.id } });
    if (!request && !following) {
      throw new DomainError("YOU_ARE_NOT_FOLLOW_ACCOUNT", {
        detail: `${localName} neither follows ${remoteHandle} nor asked to`,
      });
    }
    const activityId = federator.activityId(local.id);
    const sides = { followerId: local.id, followeeId: remote.id };
    await federator.send(tx, { type: "unfollow", ...sides, activityId: request?.activity_uri ?? null });
    await federator.send(tx, { type: "follow", ...sides, activityId });
    // Its resends start over from this Follow.
    if (request)
      await tx.followRequest.update({ where, data: { activityUri: activityId, sentAt: new Date(), resends: 0 } });
    return { pending: Boolean(request), activityId };
  });
}
