// What a silence of a remote server does (docs/federation.md#moderation): its accounts' notes reach
// only those who follow them. Decided at intake (the notices of its accounts' acts are written only
// for local accounts that follow the actor, a direct note to one that does not is not kept) and by
// one condition on the notes of the federated global timeline and of search, which costs nothing
// while no server has a policy.
import { Prisma } from "../../db/client.ts";
import type { Services } from "../context.ts";
import type { Viewer } from "../notes/visibility.ts";
import { onHostSql } from "./block.ts";
import { policyIn } from "./policies.ts";

/** Whether remote account `accountId`'s server is silenced: no query while no server is. */
export async function silencedAccount(services: Pick<Services, "db" | "instances">, accountId: bigint) {
  const table = await services.instances.current();
  if (![...table.values()].includes("silence")) return false;
  const account = await services.db.account.findUnique({ where: { id: accountId }, select: { host: true } });
  return account?.host ? policyIn(table, account.host) === "silence" : false;
}

/** Whether `recipient` follows `actor`, in SQL: what a silenced server's account's notice needs. */
export function followsActorSql(recipient: Prisma.Sql, actor: bigint | Prisma.Sql): Prisma.Sql {
  return Prisma.sql`EXISTS (SELECT FROM follows f WHERE f.follower_id = ${recipient} AND f.followee_id = ${actor})`;
}

/**
 * The condition on notes `n` of the federated global timeline and of search that leaves out the
 * notes of a server with a policy unless `viewer` follows their author; undefined while no server
 * has one. A blocked server's accounts are left out too: its block ended their follows here, so
 * nobody sees them. A local note (`uri` null) is decided before any account is read; a remote one
 * costs a probe of the accounts' primary key and, when it is on such a server, of the follows'.
 */
export async function unsilencedSql(
  services: Pick<Services, "instances">,
  viewer: Viewer | undefined,
): Promise<Prisma.Sql | undefined> {
  const table = await services.instances.current();
  if (table.size === 0) return undefined;
  const onServer = Prisma.join(
    [...table.keys()].map((host) => onHostSql(Prisma.sql`a.host`, host)),
    " OR ",
  );
  // Scalar subqueries, probed per note walked: as EXISTS, PostgreSQL would first hash every
  // account of those servers, or every follow of the viewer (src/domain/notes/visibility.ts).
  const followed = viewer
    ? Prisma.sql`OR (SELECT true FROM follows f WHERE f.follower_id = ${viewer.id} AND f.followee_id = n.author_id)`
    : Prisma.empty;
  return Prisma.sql`(n.uri IS NULL
    OR NOT coalesce((SELECT ${onServer} FROM accounts a WHERE a.id = n.author_id), false)
    ${followed})`;
}
