// A local account's profile change and deletion told to other servers (docs/federation.md,
// "Profiles and deletions"): the outbox rows src/domain/accounts/federation.ts writes, built here
// when relayed. Update(Person) carries the actor as its id answers it now, to the account's remote
// followers (each server's shared inbox once); Delete(Person) goes to the servers its row names,
// signed with the deleted account's keys, which stay (src/federation/keys.ts).
import type { Context } from "@fedify/fedify";
import { Delete, PUBLIC_COLLECTION, type Recipient, Update } from "@fedify/fedify/vocab";
import { PROFILE_KINDS } from "../domain/accounts/federation.ts";
import { localPerson } from "./actor.ts";
import type { FederationData } from "./data.ts";
import type { OutboxActivity } from "./outbox.ts";
import { remoteRecipient } from "./remote-accounts.ts";

const REMOTE_ACTOR = { uri: true, inboxUrl: true, sharedInboxUrl: true } as const;

export function isProfileKind(kind: string): boolean {
  return kind === PROFILE_KINDS.update || kind === PROFILE_KINDS.delete;
}

export const profileActivity: OutboxActivity = async (ctx, row) => {
  const identifier = row.sender.toString();
  const actor = ctx.getActorUri(identifier);
  const id = new URL(row.activityId);
  if (row.kind === PROFILE_KINDS.delete) {
    const accounts = await ctx.data.db.account.findMany({
      where: { id: { in: row.recipients } },
      select: REMOTE_ACTOR,
    });
    const recipients = accounts.map(remoteRecipient).filter((r): r is Recipient => r !== null);
    if (recipients.length === 0) return null;
    return { recipients, activity: new Delete({ id, actor, object: actor, to: PUBLIC_COLLECTION }) };
  }
  const account = await ctx.data.db.account.findFirst({ where: { id: row.sender, host: null, deletedAt: null } });
  // Deleted since: its Delete says the rest.
  if (!account) return null;
  const recipients = await remoteFollowers(ctx, row.sender);
  if (recipients.length === 0) return null;
  const person = await localPerson(ctx, account);
  return { recipients, activity: new Update({ id, actor, object: person, to: PUBLIC_COLLECTION }) };
};

/** The account's remote followers (deliver sends each server's shared inbox once). */
async function remoteFollowers(ctx: Context<FederationData>, accountId: bigint): Promise<Recipient[]> {
  const rows = await ctx.data.db.follow.findMany({
    where: { followeeId: accountId, remoteFollower: true, follower: { deletedAt: null } },
    select: { follower: { select: REMOTE_ACTOR } },
  });
  return rows.map((row) => remoteRecipient(row.follower)).filter((r): r is Recipient => r !== null);
}
