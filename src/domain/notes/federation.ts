// What a local note's creation and deletion write to the federation outbox (table
// federation_outbox, src/federation/outbox.ts; docs/federation.md#notes): a row only when some
// remote server may see the note, built into its activity when relayed (src/federation/notes.ts):
// Create(Note) and Delete(Tombstone), or for a plain renote Announce and Undo(Announce).
// `sender` is the author; `recipient` the author too (the note goes to its remote followers) or,
// for a direct note, its remote recipient; `recipients` the other servers' accounts it reaches
// besides (mentioned, or the author of the note it replies to or renotes); `object_id` the note's id.
import { Prisma } from "../../db/client.ts";
import type { Visibility } from "../../generated/prisma/client.ts";
import { remoteKeyOf } from "../accounts/rules.ts";
import type { Context } from "../context.ts";
import { remoteMentions } from "./mentions.ts";
import { visibleToEveryone } from "./visibility.ts";

/** Row kinds: a deletion's carries the note's visibility (`<kind>:<visibility>`), gone with the note. */
export const NOTE_KINDS = {
  create: "create-note",
  delete: "delete-note",
  announce: "announce-note",
  unannounce: "undo-announce",
} as const;

export interface FederatedNote {
  id: bigint;
  authorId: bigint;
  visibility: Visibility;
  /** A plain renote (no content, nothing attached): an Announce, not a Note. */
  plainRenote: boolean;
  /** The direct recipient, when it is another server's account. */
  remoteSendToId: bigint | null;
  /** Other servers' accounts it reaches besides the author's followers (remoteReaders). */
  remoteReaders: bigint[];
}

/**
 * The other servers' accounts a new note reaches besides its author's followers: the author of
 * the note it replies to or renotes (`about`, when remote), and each `@name@host` of its text
 * that resolves (at most MAX_REMOTE_MENTIONS; one that does not stays text). Only a note everyone
 * may see: a followers-only note's readers are its followers. Asks the network only when the
 * text names another server's account.
 */
export async function remoteReaders(
  ctx: Context,
  content: string,
  visibility: Visibility,
  about: { id: bigint; host: string | null } | undefined,
): Promise<bigint[]> {
  const federator = ctx.federation;
  if (!federator || !visibleToEveryone(visibility)) return [];
  const ids = new Set<bigint>();
  if (about?.host) ids.add(about.id);
  const names = content ? remoteMentions(content, ctx.config.localHost) : [];
  const resolved = await Promise.allSettled(names.map((n) => federator.remoteAccount(n.name, n.host)));
  for (const r of resolved) if (r.status === "fulfilled" && r.value.deletedAt === null) ids.add(r.value.id);
  return [...ids];
}

/**
 * remoteReaders of a stored note, for its deletion: those stored now (nothing is resolved again),
 * in one query.
 */
export async function storedRemoteReaders(
  ctx: Context,
  tx: Prisma.TransactionClient,
  note: { content: string; visibility: Visibility; renoteId: bigint | null; replyToId: bigint | null },
): Promise<bigint[]> {
  if (!ctx.federation || !visibleToEveryone(note.visibility)) return [];
  const keys = remoteMentions(note.content, ctx.config.localHost).map((m) => remoteKeyOf(m.name, m.host));
  const about = [note.renoteId, note.replyToId].filter((id): id is bigint => id !== null);
  if (keys.length === 0 && about.length === 0) return [];
  const rows = await tx.account.findMany({
    where: {
      host: { not: null },
      deletedAt: null,
      OR: [{ nameKey: { in: keys } }, { notes: { some: { id: { in: about } } } }],
    },
    select: { id: true },
  });
  return rows.map((r) => r.id);
}

/** A federation_outbox row of a note's creation or deletion (noteOutboxRow). */
export interface NoteOutboxRow {
  kind: string;
  sender: bigint;
  recipient: bigint;
  activityId: string;
  objectId: string;
  /** The other servers' accounts it reaches besides the recipient's followers. */
  recipients: bigint[];
  /** Written only if the sender has a remote follower. */
  whenFollowed: boolean;
}

/**
 * The outbox row for `note`'s `kind`, written when a remote server may see it, or undefined when
 * none can: federation off, a direct note to a local account. A direct note to a remote account,
 * or one reaching remote accounts it names, needs no lookup; any other note is sent when the
 * author has a remote follower (one probe of follows_remote_followers_idx, migration
 * 20261127200000_remote_followers). A creation's row is written by the note's own statement
 * (src/domain/notes/insert.ts), only with its note.
 */
export function noteOutboxRow(ctx: Context, note: FederatedNote, kind: "create" | "delete"): NoteOutboxRow | undefined {
  if (!ctx.federation) return undefined;
  if (note.visibility === "direct" && note.remoteSendToId === null) return undefined;
  const noteUri = ctx.federation.noteUri(note.id);
  const row = note.plainRenote
    ? kind === "create"
      ? { kind: NOTE_KINDS.announce, activityId: `${noteUri}#announce` }
      : { kind: `${NOTE_KINDS.unannounce}:${note.visibility}`, activityId: `${noteUri}#undo` }
    : kind === "create"
      ? { kind: NOTE_KINDS.create, activityId: `${noteUri}#create` }
      : { kind: `${NOTE_KINDS.delete}:${note.visibility}`, activityId: `${noteUri}#delete` };
  const recipients = note.visibility === "direct" ? [] : note.remoteReaders;
  return {
    ...row,
    sender: note.authorId,
    recipient: note.remoteSendToId ?? note.authorId,
    objectId: noteUri,
    recipients,
    whenFollowed: note.visibility !== "direct" && recipients.length === 0,
  };
}

/** The INSERT of a deletion's `row`. */
export function noteOutboxSql(row: NoteOutboxRow): Prisma.Sql {
  const when = row.whenFollowed
    ? Prisma.sql`WHERE EXISTS (SELECT 1 FROM follows f WHERE f.followee_id = ${row.sender} AND f.remote_follower)`
    : Prisma.empty;
  return Prisma.sql`INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id, recipients)
    SELECT ${row.kind}, ${row.sender}::bigint, ${row.recipient}::bigint, ${row.activityId}, ${row.objectId},
      ${row.recipients}::bigint[] ${when}`;
}

/**
 * Undo(Announce) rows for plain renotes deleted with the note they renote, in one statement: each
 * whose author has a remote follower, as its Announce went to them. The note's own Delete reaches
 * its author's followers only, and a server that follows just the renoter would keep the boost.
 * A direct renote's Announce is left: its recipient was never sent the renoted note's Delete's
 * audience anyway, and direct renotes are all but unused.
 */
export function unannouncedSql(
  ctx: Context,
  renotes: { id: bigint; authorId: bigint; visibility: Visibility }[],
): Prisma.Sql | undefined {
  const federator = ctx.federation;
  const open = renotes.filter((r) => r.visibility !== "direct");
  if (!federator || open.length === 0) return undefined;
  return Prisma.sql`INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id)
    SELECT ${`${NOTE_KINDS.unannounce}:`} || r.visibility, r.author_id, r.author_id, r.uri || '#undo', r.uri
    FROM unnest(${open.map((r) => r.authorId)}::bigint[], ${open.map((r) => r.visibility)}::text[],
      ${open.map((r) => federator.noteUri(r.id))}::text[]) AS r(author_id, visibility, uri)
    WHERE EXISTS (SELECT 1 FROM follows f WHERE f.followee_id = r.author_id AND f.remote_follower)`;
}
