// What a block of a remote server does at once, in the transaction that sets it
// (docs/federation.md#moderation): every follow and follow request between an account of this
// server and one of that server's ends, counters kept exact. Nothing is sent to the blocked server.
// Unblocking restores none of them.
import { Prisma } from "../../db/client.ts";

type Tx = Prisma.TransactionClient;

/** Whether a host (with or without its port) is an IP address, which has no parent domains. */
export function isAddressHost(host: string): boolean {
  return /^\[|^[\d.]+(?::\d+)?$/.test(host);
}

/** LIKE's special characters in `text` as literals. */
function literal(text: string): string {
  return text.replace(/[\\%_]/g, "\\$&");
}

/**
 * Whether `column` (an accounts.host) is on `host` as a policy for it reaches (policyIn): the host
 * itself, and for a name without a port its other ports and its subdomains.
 */
export function onHostSql(column: Prisma.Sql, host: string): Prisma.Sql {
  if (/:\d+$/.test(host)) return Prisma.sql`${column} = ${host}`;
  const name = literal(host);
  const ports = Prisma.sql`${column} = ${host} OR ${column} LIKE ${`${name}:%`}`;
  if (isAddressHost(host)) return Prisma.sql`(${ports})`;
  return Prisma.sql`(${ports} OR ${column} LIKE ${`%.${name}`} OR ${column} LIKE ${`%.${name}:%`})`;
}

/** Ends the follows and follow requests between this server's accounts and `host`'s. */
export async function endFollowsWith(tx: Tx, host: string): Promise<{ follows: number; requests: number }> {
  const remote = onHostSql(Prisma.sql`a.host`, host);
  // Each follow has a local side, so a follow is found once, by its remote side. The counters of
  // both sides move in one statement, rows locked in id order as moveFollowCounters locks them.
  const [{ follows }] = await tx.$queryRaw<{ follows: number }[]>`
    WITH gone AS (
      DELETE FROM follows f USING accounts a
      WHERE a.id IN (f.follower_id, f.followee_id) AND a.host IS NOT NULL AND ${remote}
      RETURNING f.follower_id, f.followee_id
    ), moved AS (
      SELECT id, sum(following)::int AS following, sum(followers)::int AS followers FROM (
        SELECT follower_id AS id, 1 AS following, 0 AS followers FROM gone
        UNION ALL SELECT followee_id, 0, 1 FROM gone
      ) sides GROUP BY id
    ), locked AS (
      SELECT id FROM accounts WHERE id IN (SELECT id FROM moved) ORDER BY id FOR NO KEY UPDATE
    ), updated AS (
      UPDATE accounts x SET following_count = x.following_count - m.following,
                            followers_count = x.followers_count - m.followers
      FROM moved m WHERE x.id = m.id AND x.id IN (SELECT id FROM locked)
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone)::int AS follows, (SELECT count(*) FROM updated)::int AS updated`;
  const requests = await tx.$executeRaw`
    DELETE FROM follow_requests r USING accounts a
    WHERE a.id IN (r.requester_id, r.target_id) AND a.host IS NOT NULL AND ${remote}`;
  return { follows, requests };
}
