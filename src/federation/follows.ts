// Follows and blocks across servers (docs/federation.md#follows), the ActivityPub side: what a
// local account's act sends (Follow, Undo(Follow), Accept, Reject, Block, Undo(Block)) and what the
// same activities from another server do here. The rules are the domain's
// (src/domain/social/service.ts); this only reads and writes activities.
import type { Context, Federation, InboxContext, InboxListenerSetters } from "@fedify/fedify";
import { Accept, type Activity, Block, Follow, type Recipient, Reject, Undo } from "@fedify/fedify/vocab";
import { parseSnowflake } from "../db/snowflake.ts";
import type { Federator, SocialAct } from "../domain/context.ts";
import { remoteAnswered, remoteBlock, remoteFollow, remoteUnfollow } from "../domain/social/service.ts";
import type { Account } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { deliver } from "./delivery.ts";
import { actorAccount } from "./remote-accounts.ts";

type RemoteActor = Pick<Account, "uri" | "inboxUrl" | "sharedInboxUrl">;

/** What the domain's social acts send (src/domain/context.ts's Federator). */
export function socialActs(
  federation: Federation<FederationData>,
  services: AppServices,
): Pick<Federator, "activityId" | "send"> {
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  return {
    activityId: (actorId) => activityId(ctx, actorId),
    async send(act) {
      const [local, remoteId] = "blockerId" in act ? [act.blockerId, act.blockedId] : sides(act);
      const remote = await services.db.account.findUnique({ where: { id: remoteId }, select: REMOTE_ACTOR });
      if (!remote?.uri) return;
      await sendAs(ctx, local, remote, activityOf(ctx, act, local, new URL(remote.uri)));
    },
  };
}

const REMOTE_ACTOR = { uri: true, inboxUrl: true, sharedInboxUrl: true } as const;

/** The local and the remote side of a follow act. */
function sides(act: Extract<SocialAct, { followerId: bigint }>): [bigint, bigint] {
  // A Follow and its Undo are the local follower's; an Accept or Reject, the local followee's.
  return act.type === "follow" || act.type === "unfollow"
    ? [act.followerId, act.followeeId]
    : [act.followeeId, act.followerId];
}

function activityOf(ctx: Context<FederationData>, act: SocialAct, local: bigint, remote: URL): Activity {
  const actor = ctx.getActorUri(local.toString());
  const id = new URL(activityId(ctx, local));
  const named = (uri: string | null) => (uri ? new URL(uri) : null);
  switch (act.type) {
    case "follow":
      return new Follow({ id: new URL(act.activityId), actor, object: remote });
    case "unfollow":
      return new Undo({ id, actor, object: new Follow({ id: named(act.activityId), actor, object: remote }) });
    case "accept":
    case "reject": {
      // The Follow answered, by the id its server gave it when known (Mastodon finds it by that).
      const object = new Follow({ id: named(act.activityId), actor: remote, object: actor });
      return act.type === "accept" ? new Accept({ id, actor, object }) : new Reject({ id, actor, object });
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

/** Sends `activity` as local account `local` to one remote account, through the queue (deliver). */
async function sendAs(ctx: Context<FederationData>, local: bigint, remote: RemoteActor, activity: Activity) {
  await deliver(ctx, local.toString(), recipientOf(remote), activity);
}

function recipientOf(remote: RemoteActor): Recipient {
  return {
    id: new URL(remote.uri as string),
    inboxId: new URL(remote.inboxUrl as string),
    endpoints: remote.sharedInboxUrl ? { sharedInbox: new URL(remote.sharedInboxUrl) } : null,
  };
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
      if (!follower) return;
      const outcome = await remoteFollow(ctx.data, follower.id, followeeId, follow.id.href);
      if (outcome === "requested") return;
      // Accepted (again, for a follow already known: its server asked once more), or refused.
      const act = { followerId: follower.id, followeeId, activityId: follow.id.href } as const;
      const type = outcome === "followed" ? "accept" : "reject";
      await sendAs(ctx, followeeId, follower, activityOf(ctx, { type, ...act }, followeeId, follow.actorId));
    })
    .on(Accept, (ctx, accept) => answered(ctx, accept, true))
    .on(Reject, (ctx, reject) => answered(ctx, reject, false))
    .on(Undo, async (ctx, undo) => {
      const sender = await storedActor(ctx, undo.actorId);
      if (!sender) return;
      // Embedded, on the sender's own origin; what it names is checked against the signer.
      const object = await undo.getObject({ suppressError: true });
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
