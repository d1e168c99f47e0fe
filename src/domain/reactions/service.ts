// Reactions (docs/notes.md#reactions): one per account per note, enforced by the database.
import { foreignKeyViolation, Prisma, queryRows } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Reaction } from "../../generated/prisma/client.ts";
import type { Context, Federator } from "../context.ts";
import { DomainError } from "../errors.ts";
import { WAKES_LIVE_SQL, wakeLiveHubs } from "../live/wake.ts";
import { type NoteLoader, noteViews } from "../notes/load.ts";
import { findVisibleNote, type NoteView } from "../notes/service.ts";
import { audienceSql, unfrozenSql, visibleTo } from "../notes/visibility.ts";
import { notifiableSql } from "../notifications/notify.ts";
import { parseBeforeId } from "../paging.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import { checkReactionEmoji } from "./emoji.ts";

/**
 * Outbox kinds of a reaction to a remote note (src/federation/reactions.ts), `object_id` the
 * note's uri: `like:<emoji>`, and `unlike:<reaction id>:<emoji>`.
 */
export const LIKE_KIND = "like:";
export const UNLIKE_KIND = "unlike:";

/** Notes seen to be local (bounded: cleared when full, as emoji.ts's `accepted`). */
const localNotes = new Set<bigint>();
const LOCAL_NOTES_MAX = 10_000;

function rememberLocal(id: bigint): void {
  if (localNotes.size >= LOCAL_NOTES_MAX) localNotes.clear();
  localNotes.add(id);
}

export async function react<T = NoteView>(
  ctx: Context,
  noteId: string,
  emojiText: string,
  load: NoteLoader<T> = noteViews,
): Promise<T> {
  const caller = requireAccount(ctx);
  const emoji = await checkReactionEmoji(ctx, emojiText);
  const id = parseSnowflake(noteId);
  if (id === undefined) throw new DomainError("NOTE_NOT_FOUND");
  // Seeing the note, the block, the reaction and its notice in one statement, atomic on its own:
  // a viral note takes reactions from many accounts at once, and a transaction held over round
  // trips would make them queue. Its counts are kept by the reactions' triggers, in the same
  // statement. So is the check that the caller's account is alive: its row locked KEY SHARE and
  // read before the insert (what refuse_deleted_accounts does for other tables, migration
  // 20261125060000), so a deletion's last batch either waits for the reaction and removes it, or
  // the reaction waits for the batch and sees the account deleted.
  let outcome: { visible: boolean; blocked: boolean; reacted: boolean; alive: boolean; local?: boolean | null };
  const reactionId = ctx.ids.next();
  // To a remote note, the Like goes to its author's server, written by the same statement
  // (docs/federation.md, "Reactions"). A note this process has seen to be local (its uri null,
  // which never changes) gets the statement without that part: a viral local note pays for it
  // once, not per reaction (its planning and execution were ~50 µs of ~700). A remote note's
  // author is a remote account, which gets no notifications (docs/federation.md#follows).
  const mayBeRemote = ctx.federation !== undefined && !localNotes.has(id);
  const like = mayBeRemote
    ? Prisma.sql`, liked AS (
        INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id)
        SELECT ${LIKE_KIND + emoji}, ${caller.id}, t.author_id, ${ctx.federation?.likeId(caller.id, reactionId)}, t.uri
        FROM reacted r JOIN target t ON t.id = r.note_id WHERE t.uri IS NOT NULL
      )`
    : Prisma.empty;
  try {
    // Through node-postgres directly (queryRows): Prisma's runtime around it was CPU of its own.
    [outcome] = await queryRows<typeof outcome>(
      ctx.db,
      Prisma.sql`
      WITH reactor AS (
        SELECT a.id FROM accounts a WHERE a.id = ${caller.id} AND a.deleted_at IS NULL AND ${WAKES_LIVE_SQL} FOR KEY SHARE
      ), target AS (
        SELECT n.id, n.author_id ${mayBeRemote ? Prisma.sql`, n.uri` : Prisma.empty} FROM notes n WHERE n.id = ${id} AND ${audienceSql(caller)} ${unfrozenSql(caller)}
      ), blocked AS (
        SELECT EXISTS (SELECT FROM blocks b JOIN target t ON b.blocker_id = t.author_id
          WHERE b.blocked_id = ${caller.id}) AS yes
      ), reacted AS (
        INSERT INTO reactions (id, note_id, account_id, emoji)
        SELECT ${reactionId}, t.id, r.id, ${emoji} FROM target t, reactor r WHERE NOT (SELECT yes FROM blocked)
        ON CONFLICT (note_id, account_id) DO NOTHING
        RETURNING note_id
      ), notified AS (
        INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content)
        SELECT ${ctx.ids.next()}, t.author_id, 'reacted'::"NotificationType", ${caller.id}, t.id, ${emoji}
        FROM reacted r JOIN target t ON t.id = r.note_id WHERE ${notifiableSql(Prisma.sql`t.author_id`, caller.id)}
          ${mayBeRemote ? Prisma.sql`AND t.uri IS NULL` : Prisma.empty}
      )${like}
      SELECT EXISTS (SELECT FROM target) AS visible, (SELECT yes FROM blocked) AS blocked,
        EXISTS (SELECT FROM reacted) AS reacted, EXISTS (SELECT FROM reactor) AS alive
        ${mayBeRemote ? Prisma.sql`, (SELECT t.uri IS NULL FROM target t) AS local` : Prisma.empty}`,
    );
  } catch (err) {
    // Deleted meanwhile; node-postgres' errors are PostgreSQL's own.
    if (foreignKeyViolation(err) || (err as { code?: string }).code === "23503")
      throw new DomainError("NOTE_NOT_FOUND");
    throw err;
  }
  if (outcome.local) rememberLocal(id);
  // Its notice's journal row was written without a NOTIFY (WAKES_LIVE_SQL): committed now, it wakes the hubs.
  if (outcome.reacted) wakeLiveHubs(ctx.db, ctx.log);
  // Deleted since its token was read: the token is one of a deleted account's
  // (docs/accounts.md#deletion).
  if (!outcome.alive) throw new DomainError("INVALID_TOKEN", { credentials: true });
  if (!outcome.visible) throw new DomainError("NOTE_NOT_FOUND");
  if (outcome.blocked) throw new DomainError("YOU_ARE_BLOCKED");
  if (!outcome.reacted) throw new DomainError("ALREADY_REACTED");
  // The note as it stands now, with the caller's reaction (its own, shown however many come
  // after), read in one statement as a timeline's notes are.
  const [note] = await load(ctx, Prisma.sql`SELECT n.* FROM notes n WHERE n.id = ${id}`);
  if (!note) throw new DomainError("NOTE_NOT_FOUND"); // deleted since
  return note;
}

export async function unreact(ctx: Context, noteId: string): Promise<void> {
  const caller = requireAccount(ctx);
  const note = await findVisibleNote(ctx, noteId);
  if (note.uri && ctx.federation) return unlike(ctx, ctx.federation, caller.id, { ...note, uri: note.uri });
  const { count } = await ctx.db.reaction.deleteMany({ where: { noteId: note.id, accountId: caller.id } });
  if (count === 0) throw new DomainError("NOT_REACTED");
}

/** A reaction to a remote note, the Undo of its Like (src/federation/reactions.ts reads them). */
async function unlike(
  ctx: Context,
  federator: Federator,
  callerId: bigint,
  note: { id: bigint; authorId: bigint; uri: string },
): Promise<void> {
  await ctx.db.$transaction(async (tx) => {
    const [gone] = await tx.$queryRaw<{ id: bigint; emoji: string }[]>`
      DELETE FROM reactions WHERE note_id = ${note.id} AND account_id = ${callerId} RETURNING id, emoji`;
    if (!gone) throw new DomainError("NOT_REACTED");
    await tx.federationOutbox.create({
      data: {
        // The Like undone is named by the reaction's id, gone with the row.
        kind: `${UNLIKE_KIND}${gone.id}:${gone.emoji}`,
        sender: callerId,
        recipient: note.authorId,
        activityId: federator.activityId(callerId),
        objectId: note.uri,
      },
    });
  });
}

export const REACTIONS_PAGE = 100;

/**
 * GET /notes/{id}/reactions (docs/notes.md#reaction-list): every reaction of a note the caller may
 * see, newest first, REACTIONS_PAGE a page, paged by `before_id` as timelines are.
 */
export async function listReactions(
  ctx: Context,
  noteId: string,
  beforeId?: string,
  /** At most REACTIONS_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = REACTIONS_PAGE,
): Promise<Reaction[]> {
  const before = parseBeforeId(beforeId);
  const id = parseSnowflake(noteId);
  const visible =
    id !== undefined && (await ctx.db.note.count({ where: { id, ...visibleTo(optionalAccount(ctx)) } })) > 0;
  if (!visible) throw new DomainError("NOTE_NOT_FOUND");
  return ctx.db.$queryRaw<Reaction[]>`
    SELECT id, note_id AS "noteId", account_id AS "accountId", emoji, created_at AS "createdAt"
    FROM newest_reactions(${id}, ${Math.min(limit, REACTIONS_PAGE + 1)}::int, ${before ?? null}::bigint)`;
}
