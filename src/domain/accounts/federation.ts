// What a local account's profile change and deletion write to the federation outbox (table
// federation_outbox, src/federation/outbox.ts; docs/federation.md, "Profiles and deletions"), built
// into Update(Person) and Delete(Person) when relayed (src/federation/profile.ts). Each is written
// in the transaction of the change, so a process dying after its commit loses nothing.
import type { Prisma } from "../../db/client.ts";
import type { Services } from "../context.ts";

export const PROFILE_KINDS = { update: "update-person", delete: "delete-person" } as const;

/**
 * Account `accountId`'s new profile, to its remote followers' servers (read when relayed): written
 * only when it has one (one probe of the partial index of remote followers).
 */
export async function profileChanged(services: Services, tx: Prisma.TransactionClient, accountId: bigint) {
  if (!services.federation) return;
  await tx.$executeRaw`
    INSERT INTO federation_outbox (kind, sender, recipient, activity_id)
    SELECT ${PROFILE_KINDS.update}, ${accountId}, ${accountId}, ${services.federation.activityId(accountId)}
    WHERE EXISTS (SELECT FROM follows f WHERE f.followee_id = ${accountId} AND f.remote_follower)`;
}

/**
 * Local account `accountId`'s deletion, to every server that knew it through the social graph: one
 * account of each server among its followers, followees and follow requests either way, read now
 * (`recipients`), as the deletion job removes them before the row may be relayed. Nothing for a
 * remote account, or a local one no other server knew.
 */
export async function accountDeleted(services: Services, tx: Prisma.TransactionClient, accountId: bigint) {
  if (!services.federation) return;
  await tx.$executeRaw`
    WITH known AS (
      SELECT DISTINCT ON (r.host) r.id FROM accounts r
      WHERE r.host IS NOT NULL AND r.deleted_at IS NULL AND r.id IN (
        SELECT follower_id FROM follows WHERE followee_id = ${accountId}
        UNION SELECT followee_id FROM follows WHERE follower_id = ${accountId}
        UNION SELECT requester_id FROM follow_requests WHERE target_id = ${accountId}
        UNION SELECT target_id FROM follow_requests WHERE requester_id = ${accountId})
      ORDER BY r.host, r.id
    )
    INSERT INTO federation_outbox (kind, sender, recipient, activity_id, recipients)
    SELECT ${PROFILE_KINDS.delete}, a.id, a.id, ${services.federation.activityId(accountId)},
      ARRAY(SELECT id FROM known)
    FROM accounts a WHERE a.id = ${accountId} AND a.host IS NULL AND EXISTS (SELECT FROM known)`;
}
