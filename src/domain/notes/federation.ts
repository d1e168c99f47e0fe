// What a local note's creation and deletion write to the federation outbox (table
// federation_outbox, src/federation/outbox.ts; docs/federation.md#notes): a row only when some
// remote server may see the note, built into Create(Note) or Delete(Tombstone) when relayed
// (src/federation/notes.ts). `sender` is the author; `recipient` the author too (the note goes to
// its remote followers) or, for a direct note, its remote recipient; `object_id` the note's id.
import { Prisma } from "../../db/client.ts";
import type { Visibility } from "../../generated/prisma/client.ts";
import type { Context } from "../context.ts";

/** Row kinds: a deletion's carries the note's visibility (`delete-note:<visibility>`), gone with the note. */
export const NOTE_KINDS = { create: "create-note", delete: "delete-note" } as const;

export interface FederatedNote {
  id: bigint;
  authorId: bigint;
  visibility: Visibility;
  renoteId: bigint | null;
  /** The direct recipient, when it is another server's account. */
  remoteSendToId: bigint | null;
}

/**
 * An INSERT into the outbox for `note`'s `kind`, written when a remote server may see it, or
 * undefined when none can: federation off, a renote (an Announce, not sent yet), a direct note to
 * a local account. A direct note to a remote account needs no lookup; any other note is sent when
 * the author has a remote follower (one probe of follows_remote_followers_idx, migration
 * 20261127200000_remote_followers).
 */
export function noteOutboxSql(ctx: Context, note: FederatedNote, kind: "create" | "delete"): Prisma.Sql | undefined {
  if (!ctx.federation || note.renoteId !== null) return undefined;
  if (note.visibility === "direct" && note.remoteSendToId === null) return undefined;
  const noteUri = ctx.federation.noteUri(note.id);
  const row =
    kind === "create"
      ? { kind: NOTE_KINDS.create, activityId: `${noteUri}#create` }
      : { kind: `${NOTE_KINDS.delete}:${note.visibility}`, activityId: `${noteUri}#delete` };
  const recipient = note.remoteSendToId ?? note.authorId;
  // A creation's row is part of insertNote's statement: written only with its note (CTE `note`).
  const from = kind === "create" ? Prisma.sql`FROM note` : Prisma.empty;
  const when =
    note.visibility === "direct"
      ? Prisma.empty
      : Prisma.sql`WHERE EXISTS (SELECT 1 FROM follows f WHERE f.followee_id = ${note.authorId} AND f.remote_follower)`;
  return Prisma.sql`INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id)
    SELECT ${row.kind}, ${note.authorId}::bigint, ${recipient}::bigint, ${row.activityId}, ${noteUri} ${from} ${when}`;
}
