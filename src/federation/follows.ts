// Follows and blocks across servers (docs/federation.md#follows), the ActivityPub side: what a
// local account's act sends (Follow, Undo(Follow), Accept, Reject, Block, Undo(Block)) and what the
// same activities from another server do here. The rules are the domain's
// (src/domain/social/service.ts); this only reads and writes activities. What an act sends is
// written to the federation outbox in the act's transaction (src/federation/outbox.ts), and built
// into its activity when relayed (socialActivity).
import type { Context, Federation, InboxContext, InboxListenerSetters } from "@fedify/fedify";
import { Accept, type Activity, Block, Follow, Reject, Undo } from "@fedify/fedify/vocab";
import { parseSnowflake } from "../db/snowflake.ts";
import type { Federator, SocialAct } from "../domain/context.ts";
import { remoteAnswered, remoteBlock, remoteFollow, remoteUnfollow } from "../domain/social/service.ts";
import type { Account } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { type OutboxActivity, writeOutbox } from "./outbox.ts";
import { reactionUndone } from "./reactions.ts";
import { actorAccount, remoteRecipient } from "./remote-accounts.ts";
import { noteDeleted } from "./remote-notes.ts";

/** What the domain's social acts send (src/domain/context.ts's Federator): outbox rows. */
export function socialActs(
  federation: Federation<FederationData>,
  services: AppServices,
): Pick<Federator, "activityId" | "send"> {
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  return {
    activityId: (actorId) => activityId(ctx, actorId),
    async send(tx, act) {
      const [sender, recipient] = "blockerId" in act ? [act.blockerId, act.blockedId] : sides(act);
      // A Follow's id is the one its request holds; the others' are made now, so that a row
      // relayed twice would still be one activity to its receiver.
      const [id, objectId] =
        act.type === "follow"
          ? [act.activityId, null]
          : [activityId(ctx, sender), "activityId" in act ? act.activityId : null];
      await writeOutbox(tx, { kind: act.type, sender, recipient, activityId: id, objectId });
    },
  };
}

const REMOTE_ACTOR = { uri: true, inboxUrl: true, sharedInboxUrl: true } as const;
const KINDS: readonly string[] = [
  "follow",
  "unfollow",
  "accept",
  "reject",
  "block",
  "unblock",
] satisfies SocialAct["type"][];

/** A social act's outbox row as the activity it sends, to the remote account's inbox. */
export const socialActivity: OutboxActivity = async (ctx, row) => {
  if (!KINDS.includes(row.kind)) throw new Error(`federation outbox: no activity of kind ${row.kind}`);
  const remote = await ctx.data.db.account.findUnique({ where: { id: row.recipient }, select: REMOTE_ACTOR });
  const recipient = remote && remoteRecipient(remote);
  // Gone, or no remote account: nobody to send to.
  if (!recipient) return null;
  return { recipients: recipient, activity: activityOf(ctx, row.kind as SocialAct["type"], row, recipient.id as URL) };
};

/** The local and the remote side of a follow act. */
function sides(act: Extract<SocialAct, { followerId: bigint }>): [bigint, bigint] {
  // A Follow and its Undo are the local follower's; an Accept or Reject, the local followee's.
  return act.type === "follow" || act.type === "unfollow"
    ? [act.followerId, act.followeeId]
    : [act.followeeId, act.followerId];
}

function activityOf(
  ctx: Context<FederationData>,
  kind: SocialAct["type"],
  row: { sender: bigint; activityId: string; objectId: string | null },
  remote: URL,
): Activity {
  const actor = ctx.getActorUri(row.sender.toString());
  const id = new URL(row.activityId);
  const named = (uri: string | null) => (uri ? new URL(uri) : null);
  switch (kind) {
    case "follow":
      return new Follow({ id, actor, object: remote });
    case "unfollow":
      return new Undo({ id, actor, object: new Follow({ id: named(row.objectId), actor, object: remote }) });
    case "accept":
    case "reject": {
      // The Follow answered, by the id its server gave it when known (Mastodon finds it by that).
      const object = new Follow({ id: named(row.objectId), actor: remote, object: actor });
      return kind === "accept" ? new Accept({ id, actor, object }) : new Reject({ id, actor, object });
    }
    case "block":
      return new Block({ id, actor, object: remote });
    case "unblock":
      return new Undo({ id, actor, object: new Block({ actor, object: remote }) });
  }
}

/**
 * A new id for an activity of local account `actorId`: a fragment of its actor (as Mastodon's
 * `#follows/<id>`), unique by its snowflake, so no two activities share an id (Fedify's inbox
 * drops an id it has handled).
 */
function activityId(ctx: Context<FederationData>, actorId: bigint): string {
  return `${ctx.getActorUri(actorId.toString()).href}#activities/${ctx.data.ids.next()}`;
}

/**
 * The local account `uri` is the actor of (`/accounts/<id>`, the identifier last), or undefined:
 * another server's actor, the instance actor, anything else.
 */
function localAccountId(ctx: Context<FederationData>, uri: URL | null): bigint | undefined {
  if (!uri) return undefined;
  const prefix = ctx.getActorUri("0").href.slice(0, -1);
  return uri.href.startsWith(prefix) ? parseSnowflake(uri.href.slice(prefix.length)) : undefined;
}

/** The remote account stored for actor `uri` (not deleted): only one stored can have been followed. */
async function storedActor(ctx: InboxContext<FederationData>, uri: URL | null): Promise<Account | null> {
  if (!uri) return null;
  return ctx.data.db.account.findUnique({ where: { uri: uri.href, deletedAt: null } });
}

export function listenToFollows(listeners: InboxListenerSetters<FederationData>): void {
  listeners
    .on(Follow, async (ctx, follow) => {
      const followeeId = localAccountId(ctx, follow.objectId);
      if (!follow.id || !follow.actorId || followeeId === undefined) return;
      const follower = await actorAccount(ctx, follow.actorId);
      // Its Accept or Reject is written with what it did (remoteFollow).
      if (follower) await remoteFollow(ctx.data, follower.id, followeeId, follow.id.href);
    })
    .on(Accept, (ctx, accept) => answered(ctx, accept, true))
    .on(Reject, (ctx, reject) => answered(ctx, reject, false))
    .on(Undo, async (ctx, undo) => {
      const sender = await storedActor(ctx, undo.actorId);
      if (!sender) return;
      // An Announce's: its renote goes (src/federation/remote-notes.ts); found by id, not fetched.
      if (await noteDeleted(ctx, undo)) return;
      // Embedded, on the sender's own origin; what it names is checked against the signer.
      const object = await undo.getObject({ suppressError: true });
      // A Like's or EmojiReact's: its reaction goes (src/federation/reactions.ts).
      if (await reactionUndone(ctx, sender, object)) return;
      if (!(object instanceof Follow || object instanceof Block) || object.actorId?.href !== sender.uri) return;
      const localId = localAccountId(ctx, object.objectId);
      if (localId === undefined) return;
      if (object instanceof Follow) await remoteUnfollow(ctx.data, sender.id, localId);
      else if (object instanceof Block) await remoteBlock(ctx.data, sender.id, localId, false);
    })
    .on(Block, async (ctx, block) => {
      const blockedId = localAccountId(ctx, block.objectId);
      if (!block.actorId || blockedId === undefined) return;
      const blocker = await actorAccount(ctx, block.actorId);
      if (blocker) await remoteBlock(ctx.data, blocker.id, blockedId, true);
    });
}

/**
 * A remote account's Accept or Reject of a local account's Follow: the Follow is found by the id
 * this server gave it (kept with the request), else as the answer carries it, which must be a Follow
 * of the answering account by a local one.
 */
async function answered(ctx: InboxContext<FederationData>, answer: Accept | Reject, accepted: boolean) {
  const sender = await storedActor(ctx, answer.actorId);
  if (!sender) return;
  let followerId: bigint | undefined;
  if (answer.objectId) {
    const request = await ctx.data.db.followRequest.findFirst({
      where: { activityUri: answer.objectId.href, targetId: sender.id },
      select: { requesterId: true },
    });
    followerId = request?.requesterId;
  }
  if (followerId === undefined) {
    // The Follow's id is this server's, so on another origin than the answer: Fedify would fetch it
    // again rather than read it, unless trusted. It is safe to: it may only name a follow of the
    // signer, which is the signer's to answer.
    const follow = await answer.getObject({ crossOrigin: "trust", suppressError: true });
    if (follow instanceof Follow && follow.objectId?.href === sender.uri)
      followerId = localAccountId(ctx, follow.actorId);
  }
  if (followerId !== undefined) await remoteAnswered(ctx.data, followerId, sender.id, accepted);
}
