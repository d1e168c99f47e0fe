// Reactions across servers (docs/federation.md, "Reactions"). Outgoing: a local account's reaction
// to a remote note is a `Like` to the note's author, `content` the emoji (`_misskey_reaction` the
// same, and for a custom emoji `:alias:` with an `Emoji` tag, as Misskey sends them); withdrawn, its
// `Undo`. Written to the outbox by the reaction's own statement (src/domain/reactions/service.ts)
// and built here when relayed. Incoming: `Like` (with or without content) and `EmojiReact` of a
// note known here, and their `Undo`, read into what src/domain/reactions/remote.ts writes.
import type { Context, Federation, InboxContext, InboxListenerSetters } from "@fedify/fedify";
import { type Activity, Emoji, EmojiReact, Image, Like, Note, Undo } from "@fedify/fedify/vocab";
import { parseSnowflake } from "../db/snowflake.ts";
import { fileUrl } from "../domain/drive/urls.ts";
import { wasOvertaken } from "../domain/overtaken.ts";
import { remoteReact, remoteReactionEmoji, remoteUnreact } from "../domain/reactions/remote.ts";
import { LIKE_KIND, UNLIKE_KIND } from "../domain/reactions/service.ts";
import type { Account } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import type { OutboxActivity } from "./outbox.ts";
import { actorAccount, remoteRecipient } from "./remote-accounts.ts";

const MISSKEY_CONTEXT = { misskey: "https://misskey-hub.net/ns#", _misskey_reaction: "misskey:_misskey_reaction" };
const CUSTOM = /^<:([A-Za-z0-9_]{2,64}):([0-9]{1,20})>$/;

/** What the domain asks of reactions (src/domain/context.ts's Federator). */
export function reactionUris(federation: Federation<FederationData>, services: AppServices) {
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  return {
    // The reaction's snowflake is unique among the ids of the actor's activities (made by the same generator).
    likeId: (accountId: bigint, reactionId: bigint) =>
      `${ctx.getActorUri(accountId.toString()).href}#likes/${reactionId}`,
  };
}

/**
 * A Like that also carries its content as `_misskey_reaction`, which Fedify's vocabulary has no
 * property for: added to its compact form, which is what is signed (the proof is over it) and sent.
 */
class ReactionLike extends Like {
  override async toJsonLd(options: Parameters<Like["toJsonLd"]>[0] = {}): Promise<unknown> {
    const json = await super.toJsonLd(options);
    const content = this.content?.toString();
    if (options.format === "expand" || !content || typeof json !== "object" || json === null) return json;
    const compact = json as Record<string, unknown>;
    const context = compact["@context"];
    return {
      ...compact,
      "@context": [...(Array.isArray(context) ? context : context ? [context] : []), MISSKEY_CONTEXT],
      _misskey_reaction: content,
    };
  }
}

export function isReactionKind(kind: string): boolean {
  return kind.startsWith(LIKE_KIND) || kind.startsWith(UNLIKE_KIND);
}

/** A reaction's outbox row as its Like or Undo(Like), to the remote note's author. */
export const reactionActivity: OutboxActivity = async (ctx, row) => {
  if (!row.objectId) return null;
  const author = await ctx.data.db.account.findUnique({
    where: { id: row.recipient, deletedAt: null },
    select: { uri: true, inboxUrl: true, sharedInboxUrl: true },
  });
  const recipient = author && remoteRecipient(author);
  if (!recipient?.id) return null;
  const actor = ctx.getActorUri(row.sender.toString());
  const to = recipient.id;
  const note = new URL(row.objectId);
  if (row.kind.startsWith(LIKE_KIND)) {
    const like = await likeOf(ctx, new URL(row.activityId), actor, note, row.kind.slice(LIKE_KIND.length), to);
    return { recipients: recipient, activity: like };
  }
  const rest = row.kind.slice(UNLIKE_KIND.length);
  const colon = rest.indexOf(":");
  const reactionId = BigInt(rest.slice(0, colon));
  const likeId = new URL(ctx.data.federation?.likeId(row.sender, reactionId) ?? "");
  const like = await likeOf(ctx, likeId, actor, note, rest.slice(colon + 1), to);
  return { recipients: recipient, activity: new Undo({ id: new URL(row.activityId), actor, object: like, to }) };
};

async function likeOf(
  ctx: Context<FederationData>,
  id: URL,
  actor: URL,
  object: URL,
  emoji: string,
  to: URL,
): Promise<Activity> {
  const custom = CUSTOM.exec(emoji);
  if (!custom) return new ReactionLike({ id, actor, object, content: emoji, to });
  const name = `:${custom[1]}:`;
  const found = await ctx.data.db.customEmoji.findUnique({
    where: { id: BigInt(custom[2]) },
    select: { file: { select: { id: true, mime: true } } },
  });
  // Deleted since: its name alone, as a server that does not know it shows any unknown one.
  const icon = found
    ? new Image({ url: new URL(fileUrl(ctx.data.config, found.file.id)), mediaType: found.file.mime })
    : null;
  return new ReactionLike({ id, actor, object, content: name, to, tags: [new Emoji({ name, icon })] });
}

/** The id of the note `uri` names: this server's (`/notes/<id>`) or a remote one stored here. */
async function noteIdOf(ctx: Context<FederationData>, uri: URL): Promise<bigint | undefined> {
  if (uri.origin === new URL(ctx.data.config.publicUrl).origin) {
    const parsed = ctx.parseUri(uri);
    if (parsed?.type !== "object" || parsed.class !== Note) return undefined;
    return parseSnowflake(parsed.values.id ?? "");
  }
  const stored = await ctx.data.db.note.findUnique({ where: { uri: uri.href }, select: { id: true } });
  return stored?.id;
}

/** The reaction a Like or EmojiReact carries: `content`, else Misskey's `_misskey_reaction`. */
async function reactionText(activity: Like | EmojiReact): Promise<string | undefined> {
  const content = activity.content?.toString();
  if (content) return content;
  // Fedify keeps the JSON an object was read from; its vocabulary has no property for this one.
  const json = (await activity.toJsonLd().catch(() => null)) as Record<string, unknown> | null;
  const misskey = json?._misskey_reaction;
  return typeof misskey === "string" ? misskey : undefined;
}

async function reacted(ctx: InboxContext<FederationData>, activity: Like | EmojiReact): Promise<void> {
  if (!activity.actorId || !activity.objectId) return;
  if (activity.id && (await wasOvertaken(ctx.data.db, "undone-reaction", activity.id))) return;
  const noteId = await noteIdOf(ctx, activity.objectId);
  if (noteId === undefined) return;
  const account = await actorAccount(ctx, activity.actorId);
  if (!account) return;
  const emoji = await remoteReactionEmoji(ctx.data, await reactionText(activity));
  await remoteReact(ctx.data, account.id, noteId, emoji, activity.id ?? undefined);
}

export function listenToReactions(listeners: InboxListenerSetters<FederationData>): void {
  listeners.on(Like, reacted).on(EmojiReact, reacted);
}

/**
 * An Undo of `sender`'s Like or EmojiReact (src/federation/follows.ts hands it over): its reaction
 * to the note goes. Whether `object` was one.
 */
export async function reactionUndone(
  ctx: InboxContext<FederationData>,
  sender: Pick<Account, "id" | "uri">,
  object: unknown,
): Promise<boolean> {
  if (!(object instanceof Like || object instanceof EmojiReact)) return false;
  if (object.actorId?.href !== sender.uri || !object.objectId) return true;
  const noteId = await noteIdOf(ctx, object.objectId);
  if (noteId === undefined) return true;
  // Its Like, not here yet (sent again later, or overtaken) or being stored now, is not to count.
  // Only an id of the sender's own origin, so nobody can stop another server's Like this way.
  const own = object.id && object.id.origin === new URL(sender.uri ?? "").origin ? object.id : undefined;
  await remoteUnreact(ctx.data, sender.id, noteId, { remember: own });
  return true;
}
