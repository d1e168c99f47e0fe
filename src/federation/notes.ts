// Local notes as ActivityPub (docs/federation.md#notes), their wire fields drawn from the note
// and drive-file projections as the Person is from the account's: the Note each is at its id
// (`/notes/<id>`, the REST path of the same note, answered under content negotiation), and the
// activities its author's remote followers, its remote direct recipient, and the other servers'
// accounts it names or answers are sent: Create(Note) and Delete(Tombstone), or for a plain renote
// Announce and Undo(Announce). The domain writes what to send to the federation outbox
// (src/domain/notes/federation.ts, NOTE_KINDS); this builds each row into its activity when relayed.
import type { Context, Federation } from "@fedify/fedify";
import {
  Announce,
  Delete,
  Mention,
  Note,
  PUBLIC_COLLECTION,
  type Recipient,
  Tombstone,
  Undo,
} from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import { parseSnowflake } from "../db/snowflake.ts";
import { NOTE_KINDS } from "../domain/notes/federation.ts";
import { mentionsIn } from "../domain/notes/mentions.ts";
import { PLAIN_RENOTE } from "../domain/notes/service.ts";
import type { Account, Visibility } from "../generated/prisma/client.ts";
import { DRIVE_FILE } from "../projection/drive-file.ts";
import type { Viewer } from "../projection/field.ts";
import { NOTE } from "../projection/note.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { noteHtmlOf } from "./html.ts";
import type { OutboxActivity } from "./outbox.ts";
import { remoteRecipient } from "./remote-accounts.ts";
import { BlurhashDocument, CreateWithBlurhash, NoteWithBlurhash } from "./vocab.ts";

export const NOTE_PATH = "/notes/{id}";

const REMOTE_ACTOR = { uri: true, inboxUrl: true, sharedInboxUrl: true, name: true, host: true } as const;
type RemoteActor = Pick<Account, "uri" | "inboxUrl" | "sharedInboxUrl" | "name" | "host">;

/**
 * What the domain asks of notes' federation: a note's id, written into the outbox row of every
 * note created or deleted. A note's id is digits, which the path's URI template writes as they are,
 * so its URI is a prefix and the id: Fedify's expansion of the template, a URL parsed, was 3% of
 * the server's CPU creating notes (bench/README.md, "Note creation's server work").
 */
export function noteUris(federation: Federation<FederationData>, services: AppServices) {
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  const expanded = (noteId: bigint) => ctx.getObjectUri(Note, { id: noteId.toString() }).href;
  const sample = expanded(1n);
  if (!sample.endsWith("/1")) return { noteUri: expanded };
  const prefix = sample.slice(0, -1);
  return { noteUri: (noteId: bigint) => prefix + noteId.toString() };
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
    return await noteOf(ctx, note);
  });
}

type StoredNote = NonNullable<Awaited<ReturnType<typeof readNote>>>;

const ABOUT = { id: true, uri: true, author: { select: { id: true, ...REMOTE_ACTOR } } } as const;

function readNote(ctx: Context<FederationData>, id: bigint) {
  return ctx.data.db.note.findFirst({
    // A plain renote is an Announce, not a Note; only local authors' notes are this server's.
    where: { id, NOT: PLAIN_RENOTE, author: { host: null, deletedAt: null } },
    select: {
      id: true,
      authorId: true,
      content: true,
      cwComment: true,
      visibility: true,
      createdAt: true,
      replyTo: { select: ABOUT },
      renote: { select: ABOUT },
      sendTo: { select: REMOTE_ACTOR },
      attachments: {
        orderBy: { position: "asc" },
        select: { file: { select: { id: true, mime: true, name: true, nsfw: true, blurhash: true, url: true } } },
      },
    },
  });
}

type About = NonNullable<StoredNote["renote"]>;

/** A note's id: this server's path of a local one, the stored `uri` of another server's. */
function idOf(ctx: Context<FederationData>, note: About): URL | null {
  if (note.author.host === null) return ctx.getObjectUri(Note, { id: note.id.toString() });
  return note.uri ? new URL(note.uri) : null;
}

/** An account's actor id: this server's for a local account, the stored `uri` of a remote one. */
function actorIdOf(ctx: Context<FederationData>, account: Pick<Account, "id" | "uri" | "host">): URL | null {
  if (account.host === null) return ctx.getActorUri(account.id.toString());
  return account.uri ? new URL(account.uri) : null;
}

function addressing(
  ctx: Context<FederationData>,
  authorId: bigint,
  visibility: Visibility,
  sendTo: RemoteActor | null,
  named: URL[] = [],
) {
  const followers = ctx.getFollowersUri(authorId.toString());
  switch (visibility) {
    case "public":
      return { tos: [PUBLIC_COLLECTION], ccs: [followers, ...named] };
    case "home":
      return { tos: [followers], ccs: [PUBLIC_COLLECTION, ...named] };
    case "followers":
      return { tos: [followers], ccs: [] };
    case "direct":
      return { tos: sendTo?.uri ? [new URL(sendTo.uri)] : [], ccs: [] };
  }
}

type Named = Pick<Account, "id" | "name" | "host" | "uri">;

/** The accounts stored here that `content`'s mentions name (local and remote), by name key. */
async function mentionedAccounts(ctx: Context<FederationData>, content: string): Promise<Map<string, Named>> {
  const keys = [...new Set(mentionsIn(content, ctx.data.config.localHost).map((m) => m.nameKey))];
  if (keys.length === 0) return new Map();
  const rows = await ctx.data.db.account.findMany({
    where: { nameKey: { in: keys }, deletedAt: null },
    select: { id: true, name: true, host: true, uri: true, nameKey: true },
  });
  return new Map(rows.map(({ nameKey, ...account }) => [nameKey, account]));
}

async function noteOf(ctx: Context<FederationData>, note: StoredNote): Promise<Note> {
  const id = ctx.getObjectUri(Note, { id: note.id.toString() });
  const localHost = ctx.data.config.localHost;
  const mentioned = await mentionedAccounts(ctx, note.content);
  // Mention tags (each account once, with its actor id): of a note everyone may see, the text's
  // and the author of a remote note replied to, as Mastodon tags the account it answers; of a
  // direct note its recipient alone. A receiver lets each account a note tags read it, and a
  // followers-only or direct note's readers here are not whom its text names.
  const tagged = new Map<string, { href: URL; name: string }>();
  const tag = (account: Named) => {
    const href = actorIdOf(ctx, account);
    if (href && !tagged.has(href.href))
      tagged.set(href.href, { href, name: `@${account.name}@${account.host ?? localHost}` });
  };
  const open = note.visibility === "public" || note.visibility === "home";
  if (open) for (const account of mentioned.values()) tag(account);
  if (note.visibility === "direct" && note.sendTo) tag({ ...note.sendTo, id: 0n });
  const parent = note.replyTo;
  if (open && parent?.author.host) tag(parent.author);
  const named = open ? [...tagged.values()].map((t) => t.href) : [];
  const quoted = note.renote ? idOf(ctx, note.renote) : null;
  // Its wire fields are the projection's values (src/projection/note.ts, drive-file.ts), as REST and
  // GraphQL answer them to a reader with no account: a change of one changes the Note too.
  const viewer: Viewer = { viewerId: undefined, publicUrl: ctx.data.config.publicUrl, localHost };
  const cw = NOTE.cwComment.value(note, viewer);
  return new NoteWithBlurhash({
    id,
    url: new URL(NOTE.url.value({ ...note, url: null }, viewer)),
    attribution: ctx.getActorUri(note.authorId.toString()),
    content: noteHtmlOf(NOTE.content.value(note, viewer), localHost, (m) => {
      const account = mentioned.get(m.nameKey);
      return account ? actorIdOf(ctx, account)?.href : undefined;
    }),
    summary: cw || null,
    sensitive: cw !== "",
    published: Temporal.Instant.from(NOTE.createdAt.value(note, viewer)),
    replyTarget: parent ? idOf(ctx, parent) : null,
    // Fedify writes quoteUrl as `quoteUrl`, Misskey's `_misskey_quote` and Fedibird's `quoteUri`.
    quoteUrl: quoted,
    attachments: note.attachments.map(
      ({ file }) =>
        new BlurhashDocument({
          mediaType: DRIVE_FILE.mime.value(file, viewer),
          blurhash: DRIVE_FILE.blurhash.value(file, viewer),
          url: new URL(DRIVE_FILE.url.value(file, viewer)),
          name: DRIVE_FILE.name.value(file, viewer),
          sensitive: DRIVE_FILE.nsfw.value(file, viewer),
        }),
    ),
    tags: [...tagged.values()].map((t) => new Mention(t)),
    ...addressing(ctx, note.authorId, note.visibility, note.sendTo, named),
  });
}

function readRenote(ctx: Context<FederationData>, id: bigint) {
  return ctx.data.db.note.findFirst({
    where: { id, ...PLAIN_RENOTE, author: { host: null, deletedAt: null } },
    select: { id: true, authorId: true, visibility: true, createdAt: true, renote: { select: ABOUT } },
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

/**
 * Who a note row's activity goes to: its direct recipient (`recipient`), else the author's remote
 * followers; and the remote accounts it names or answers (`recipients`). deliver sends each inbox
 * (a shared inbox) once.
 */
async function recipientsOf(
  ctx: Context<FederationData>,
  sender: bigint,
  recipient: bigint,
  more: bigint[],
): Promise<Recipient[]> {
  const followers = recipient === sender ? await remoteFollowers(ctx, sender) : [];
  const ids = recipient === sender ? more : [recipient, ...more];
  const accounts = ids.length
    ? await ctx.data.db.account.findMany({
        where: { id: { in: ids }, host: { not: null }, deletedAt: null },
        select: REMOTE_ACTOR,
      })
    : [];
  return [...followers, ...accounts.map(remoteRecipient).filter((r): r is Recipient => r !== null)];
}

/** Whether `kind` is a note's row (NOTE_KINDS), which noteActivity builds. */
export function isNoteKind(kind: string): boolean {
  return (
    kind === NOTE_KINDS.create ||
    kind === NOTE_KINDS.announce ||
    kind.startsWith(`${NOTE_KINDS.delete}:`) ||
    kind.startsWith(`${NOTE_KINDS.unannounce}:`)
  );
}

/** A note row of the outbox as its activity (NOTE_KINDS); null when nobody is left to send it to. */
export const noteActivity: OutboxActivity = async (ctx, row) => {
  const noteUri = new URL(row.objectId as string);
  const parsed = ctx.parseUri(noteUri);
  if (parsed?.type !== "object") throw new Error(`federation outbox: ${noteUri.href} is no note of this server`);
  const recipients = await recipientsOf(ctx, row.sender, row.recipient, row.recipients);
  if (recipients.length === 0) return null;
  const actor = ctx.getActorUri(row.sender.toString());
  const id = new URL(row.activityId);
  const noteId = BigInt(parsed.values.id);
  if (row.kind === NOTE_KINDS.create) {
    const note = await readNote(ctx, noteId);
    // Deleted before it was relayed: its Delete follows, and nobody need hear of it.
    if (!note) return null;
    const object = await noteOf(ctx, note);
    return {
      recipients,
      activity: new CreateWithBlurhash({ id, actor, object, tos: object.toIds, ccs: object.ccIds }),
    };
  }
  if (row.kind === NOTE_KINDS.announce) {
    const renote = await readRenote(ctx, noteId);
    const renoted = renote?.renote;
    const object = renoted ? idOf(ctx, renoted) : null;
    if (!renote || !renoted || !object) return null;
    // The renoted note's author is told, as Mastodon cc's the account it boosts.
    const author = actorIdOf(ctx, renoted.author);
    const to = addressing(ctx, row.sender, renote.visibility, null, author ? [author] : []);
    return {
      recipients,
      activity: new Announce({
        id,
        actor,
        object,
        published: Temporal.Instant.fromEpochMilliseconds(renote.createdAt.getTime()),
        ...to,
      }),
    };
  }
  const [kind, visibility] = row.kind.split(":") as [string, Visibility];
  const direct = row.recipient === row.sender ? null : await directRecipient(ctx, row.recipient);
  const to = addressing(ctx, row.sender, visibility, direct);
  if (kind === NOTE_KINDS.unannounce) {
    // The Announce is named by its id, which is all Mastodon and Misskey look it up by.
    const announce = new Announce({ id: new URL(`${noteUri.href}#announce`), actor, ...to });
    return { recipients, activity: new Undo({ id, actor, object: announce, ...to }) };
  }
  return { recipients, activity: new Delete({ id, actor, object: new Tombstone({ id: noteUri }), ...to }) };
};

function directRecipient(ctx: Context<FederationData>, id: bigint) {
  return ctx.data.db.account.findUnique({ where: { id }, select: REMOTE_ACTOR });
}
