// A report forwarded to another server (docs/federation.md#moderation), built when its outbox row
// (src/domain/reports/forward.ts) is relayed: `Flag` from the instance actor, its objects the
// reported account's actor and the uris of the notes the report names, its content the comment,
// to the account's server (its shared inbox, else the account's inbox). Mastodon takes a Flag so.
import { Flag } from "@fedify/fedify/vocab";
import { FORWARD_KIND } from "../domain/reports/forward.ts";
import { INSTANCE_ACTOR } from "./keys.ts";
import type { OutboxActivity } from "./outbox.ts";
import { remoteRecipient } from "./remote-accounts.ts";

export function isForwardKind(kind: string): boolean {
  return kind === FORWARD_KIND;
}

export const forwardActivity: OutboxActivity = async (ctx, row) => {
  if (!row.objectId) return null;
  const report = await ctx.data.db.report.findUnique({
    where: { id: BigInt(row.objectId) },
    select: {
      comment: true,
      noteIds: true,
      account: { select: { uri: true, inboxUrl: true, sharedInboxUrl: true, deletedAt: true } },
    },
  });
  const recipient = report && !report.account.deletedAt ? remoteRecipient(report.account) : null;
  if (!report || !recipient?.id) return null;
  const notes = await ctx.data.db.note.findMany({
    where: { id: { in: report.noteIds }, uri: { not: null } },
    select: { uri: true },
    orderBy: { id: "asc" },
  });
  const objects = [recipient.id, ...notes.map((note) => new URL(note.uri as string))];
  const flag = new Flag({
    id: new URL(row.activityId),
    actor: ctx.getActorUri(INSTANCE_ACTOR),
    objects,
    content: report.comment,
  });
  return { recipients: recipient, activity: flag, sender: INSTANCE_ACTOR };
};
