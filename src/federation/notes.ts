// Local notes as ActivityPub (docs/federation.md#notes): the Note each is at its id
// (`/notes/<id>`, the REST path of the same note, answered under content negotiation), and the
// Create(Note) and Delete(Tombstone) its author's remote followers, or its remote direct recipient,
// are sent. The domain writes what to send to the federation outbox (src/domain/notes/service.ts,
// NOTE_KINDS); this builds each row into its activity when relayed.
import type { Context, Federation } from "@fedify/fedify";
import { Create, Delete, Mention, Note, PUBLIC_COLLECTION, type Recipient, Tombstone } from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import { parseSnowflake } from "../db/snowflake.ts";
import { NOTE_KINDS } from "../domain/notes/federation.ts";
import type { Account, Visibility } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { htmlOf } from "./html.ts";
import type { OutboxActivity } from "./outbox.ts";
import { remoteRecipient } from "./remote-accounts.ts";

export const NOTE_PATH = "/notes/{id}";

const REMOTE_ACTOR = { uri: true, inboxUrl: true, sharedInboxUrl: true, name: true, host: true } as const;
type RemoteActor = Pick<Account, "uri" | "inboxUrl" | "sharedInboxUrl" | "name" | "host">;

/** What the domain asks of notes' federation: a note's id. */
export function noteUris(federation: Federation<FederationData>, services: AppServices) {
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  return { noteUri: (noteId: bigint) => ctx.getObjectUri(Note, { id: noteId.toString() }).href };
}

/**
 * The Note at its id: only one everyone may see (public, home). A followers-only or direct note
 * is declined, and its path answers as REST does: who asks is not known to be one of its readers.
 */
export function registerNotes(federation: Federation<FederationData>): void {
  federation.setObjectDispatcher(Note, NOTE_PATH, async (ctx, { id }) => {
    const noteId = parseSnowflake(id);
    if (noteId === undefined) return null;
    const note = await readNote(ctx, noteId);
    if (!note || (note.visibility !== "public" && note.visibility !== "home")) return null;
    return noteOf(ctx, note);
  });
}

type StoredNote = NonNullable<Awaited<ReturnType<typeof readNote>>>;

function readNote(ctx: Context<FederationData>, id: bigint) {
  return ctx.data.db.note.findFirst({
    // A plain renote is an Announce, not a Note; only local authors' notes are this server's.
    where: { id, renoteId: null, author: { host: null, deletedAt: null } },
    select: {
      id: true,
      authorId: true,
      content: true,
      cwComment: true,
      visibility: true,
      createdAt: true,
      replyTo: { select: { id: true, author: { select: { host: true } } } },
      sendTo: { select: REMOTE_ACTOR },
    },
  });
}

function addressing(
  ctx: Context<FederationData>,
  authorId: bigint,
  visibility: Visibility,
  sendTo: RemoteActor | null,
) {
  const followers = ctx.getFollowersUri(authorId.toString());
  switch (visibility) {
    case "public":
      return { tos: [PUBLIC_COLLECTION], ccs: [followers] };
    case "home":
      return { tos: [followers], ccs: [PUBLIC_COLLECTION] };
    case "followers":
      return { tos: [followers], ccs: [] };
    case "direct":
      return { tos: sendTo?.uri ? [new URL(sendTo.uri)] : [], ccs: [] };
  }
}

function noteOf(ctx: Context<FederationData>, note: StoredNote): Note {
  const id = ctx.getObjectUri(Note, { id: note.id.toString() });
  const parent = note.replyTo;
  return new Note({
    id,
    url: id,
    attribution: ctx.getActorUri(note.authorId.toString()),
    content: htmlOf(note.content),
    summary: note.cwComment || null,
    sensitive: note.cwComment !== "",
    published: Temporal.Instant.fromEpochMilliseconds(note.createdAt.getTime()),
    // Notes of other servers are not stored yet: a parent of this server's is the only one there is.
    replyTarget: parent && parent.author.host === null ? ctx.getObjectUri(Note, { id: parent.id.toString() }) : null,
    tags:
      note.visibility === "direct" && note.sendTo?.uri
        ? [new Mention({ href: new URL(note.sendTo.uri), name: `@${note.sendTo.name}@${note.sendTo.host}` })]
        : [],
    ...addressing(ctx, note.authorId, note.visibility, note.sendTo),
  });
}

/** The author's remote followers, each server's shared inbox once (deliver prefers it). */
async function remoteFollowers(ctx: Context<FederationData>, authorId: bigint): Promise<Recipient[]> {
  const rows = await ctx.data.db.follow.findMany({
    where: { followeeId: authorId, follower: { host: { not: null }, deletedAt: null } },
    select: { follower: { select: REMOTE_ACTOR } },
  });
  return rows.map((row) => remoteRecipient(row.follower)).filter((r): r is Recipient => r !== null);
}

/** Who a note row's activity goes to: its direct recipient (`recipient`), else the author's remote followers. */
async function recipientsOf(ctx: Context<FederationData>, sender: bigint, recipient: bigint): Promise<Recipient[]> {
  if (recipient === sender) return remoteFollowers(ctx, sender);
  const remote = await ctx.data.db.account.findFirst({
    where: { id: recipient, host: { not: null }, deletedAt: null },
    select: REMOTE_ACTOR,
  });
  const one = remote && remoteRecipient(remote);
  return one ? [one] : [];
}

/** Whether `kind` is a note's row (NOTE_KINDS), which noteActivity builds. */
export function isNoteKind(kind: string): boolean {
  return kind === NOTE_KINDS.create || kind.startsWith(`${NOTE_KINDS.delete}:`);
}

/** A note row of the outbox as its Create(Note) or Delete(Tombstone); null when nobody is left to send it to. */
export const noteActivity: OutboxActivity = async (ctx, row) => {
  const noteUri = new URL(row.objectId as string);
  const parsed = ctx.parseUri(noteUri);
  if (parsed?.type !== "object") throw new Error(`federation outbox: ${noteUri.href} is no note of this server`);
  const recipients = await recipientsOf(ctx, row.sender, row.recipient);
  if (recipients.length === 0) return null;
  const actor = ctx.getActorUri(row.sender.toString());
  const id = new URL(row.activityId);
  if (row.kind === NOTE_KINDS.create) {
    const note = await readNote(ctx, BigInt(parsed.values.id));
    // Deleted before it was relayed: its Delete follows, and nobody need hear of it.
    if (!note) return null;
    const object = noteOf(ctx, note);
    return { recipients, activity: new Create({ id, actor, object, tos: object.toIds, ccs: object.ccIds }) };
  }
  const visibility = row.kind.slice(NOTE_KINDS.delete.length + 1) as Visibility;
  const direct = row.recipient === row.sender ? null : await directRecipient(ctx, row.recipient);
  const object = new Tombstone({ id: noteUri });
  return {
    recipients,
    activity: new Delete({ id, actor, object, ...addressing(ctx, row.sender, visibility, direct) }),
  };
};

function directRecipient(ctx: Context<FederationData>, id: bigint) {
  return ctx.data.db.account.findUnique({ where: { id }, select: REMOTE_ACTOR });
}
