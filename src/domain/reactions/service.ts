// Reactions (docs/notes.md#reactions): one per account per note, enforced by the database.
import { foreignKeyViolation, Prisma, queryRows } from "../../db/client.ts";
import { KeyedBatches, perClient } from "../../db/keyed-writes.ts";
import { unplannedArray } from "../../db/one-of.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Account, Reaction } from "../../generated/prisma/client.ts";
import type { Context, Federator } from "../context.ts";
import { DomainError } from "../errors.ts";
import { WAKES_LIVE_SQL, wakeLiveHubs } from "../live/wake.ts";
import { type NoteLoader, noteViews } from "../notes/load.ts";
import { findVisibleNote, type NoteView } from "../notes/service.ts";
import { audienceSql, unfrozenSql, visibleTo } from "../notes/visibility.ts";
import { notifiableSql } from "../notifications/notify.ts";
import { parseBeforeId } from "../paging.ts";
import { isModerator, optionalAccount, requireAccount } from "../sessions/caller.ts";
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
  // Written by one statement (writeReactions), with those of other callers to the same note that
  // came meanwhile.
  const mayBeRemote = ctx.federation !== undefined && !localNotes.has(id);
  const reactionId = ctx.ids.next();
  const reacting: Reacting = {
    note: id,
    caller: caller.id,
    role: caller.role,
    mayBeRemote,
    emoji,
    reactionId,
    noticeId: ctx.ids.next(),
    likeId: ctx.federation?.likeId(caller.id, reactionId) ?? null,
  };
  let outcome: ReactOutcome;
  try {
    outcome = await reactionWrites(ctx.db).run(`${id}:${isModerator(caller)}:${mayBeRemote}`, reacting);
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

interface Reacting {
  note: bigint;
  caller: bigint;
  /** The caller's, which decides whose notes it sees (unfrozenSql): one statement's are alike. */
  role: Account["role"];
  /** With the Like of a remote note: see writeReactions. */
  mayBeRemote: boolean;
  emoji: string;
  reactionId: bigint;
  noticeId: bigint;
  likeId: string | null;
}

interface ReactOutcome {
  visible: boolean;
  blocked: boolean;
  reacted: boolean;
  alive: boolean;
  /** Whether the note is local, asked when it may be remote. */
  local?: boolean | null;
}

/** Reactions to one note by callers alike (moderators or not) that come together go together. */
const MOST_TOGETHER = 64;

const reactionWrites = perClient((db) => {
  const write = (batch: Reacting[]) => queryRows<ReactOutcome>(db, writeReactions(batch));
  return new KeyedBatches<Reacting, ReactOutcome>(write, MOST_TOGETHER);
});

/**
 * One statement writing reactions to one note, each caller's outcome a row in `batch`'s order.
 * It sees the note, the block, the reaction and its notice, atomic on its own: a viral note takes
 * reactions from many accounts at once, and a transaction held over round trips would make them
 * queue; a statement of one row each paid PostgreSQL's fixed costs of a statement (its plan
 * started, its triggers set up, its commit) for one reaction, four times a row's (bench/README.md,
 * "Reactions in one statement"). Its counts are kept by the reactions' triggers, in the same
 * statement. So is the check that each caller's account is alive: its row locked KEY SHARE and
 * read before the insert (what refuse_deleted_accounts does for other tables, migration
 * 20261125060000), so a deletion's last batch either waits for the reaction and removes it, or
 * the reaction waits for the batch and sees the account deleted.
 *
 * To a remote note, the Like goes to its author's server, written by the same statement
 * (docs/federation.md, "Reactions"). A note this process has seen to be local (its uri null,
 * which never changes) gets the statement without that part: a viral local note pays for it
 * once, not per reaction. A remote note's author is a remote account, which gets no notifications
 * (docs/federation.md#follows).
 */
function writeReactions(batch: Reacting[]): Prisma.Sql {
  const [{ note, mayBeRemote }] = batch;
  const of = <K extends keyof Reacting>(key: K) => batch.map((r) => r[key]);
  const caller = Prisma.sql`i.caller`;
  const like = mayBeRemote
    ? Prisma.sql`, liked AS (
        INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id)
        SELECT ${LIKE_KIND} || i.emoji, i.caller, t.author_id, i.like_id, t.uri
        FROM reacted r JOIN input i ON i.id = r.id JOIN target t ON t.ord = i.ord WHERE t.uri IS NOT NULL
      )`
    : Prisma.empty;
  // Each array unplanned (unplannedArray): one generic plan per connection. The reactions go in
  // the order of their count rows' shards (note_reaction_counted, migration 20261124154325), then
  // of their callers: two statements of one note in two processes lock
  // their shards (and wait on each other's rows of a caller in both) in one order.
  return Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${unplannedArray(of("caller"), "bigint")}, ${unplannedArray(of("reactionId"), "bigint")},
        ${unplannedArray(of("noticeId"), "bigint")}, ${unplannedArray(of("emoji"), "text")},
        ${unplannedArray(of("likeId"), "text")})
        WITH ORDINALITY AS i (caller, id, notice, emoji, like_id, ord)
    ), reactor AS (
      SELECT i.ord, a.id FROM input i JOIN accounts a ON a.id = i.caller
      WHERE a.deleted_at IS NULL AND ${WAKES_LIVE_SQL} FOR KEY SHARE OF a
    ), target AS (
      SELECT i.ord, n.id, n.author_id ${mayBeRemote ? Prisma.sql`, n.uri` : Prisma.empty}
      FROM input i JOIN notes n ON n.id = ${note}
      WHERE ${audienceSql({ id: caller })} ${unfrozenSql(batch[0])}
    ), blocked AS (
      SELECT t.ord FROM target t JOIN input i ON i.ord = t.ord
      WHERE EXISTS (SELECT FROM blocks b WHERE b.blocker_id = t.author_id AND b.blocked_id = i.caller)
    ), reacted AS (
      INSERT INTO reactions (id, note_id, account_id, emoji)
      SELECT i.id, t.id, r.id, i.emoji FROM input i JOIN target t ON t.ord = i.ord JOIN reactor r ON r.ord = i.ord
      WHERE i.ord NOT IN (SELECT ord FROM blocked) ORDER BY hashint8(i.caller) & 15, i.caller
      ON CONFLICT (note_id, account_id) DO NOTHING
      RETURNING id
    ), notified AS (
      INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content)
      SELECT i.notice, t.author_id, 'reacted'::"NotificationType", i.caller, t.id, i.emoji
      FROM reacted r JOIN input i ON i.id = r.id JOIN target t ON t.ord = i.ord
      WHERE ${notifiableSql(Prisma.sql`t.author_id`, caller)} ${mayBeRemote ? Prisma.sql`AND t.uri IS NULL` : Prisma.empty}
    )${like}
    SELECT EXISTS (SELECT FROM target t WHERE t.ord = i.ord) AS visible,
      EXISTS (SELECT FROM blocked b WHERE b.ord = i.ord) AS blocked,
      EXISTS (SELECT FROM reacted r WHERE r.id = i.id) AS reacted,
      EXISTS (SELECT FROM reactor r WHERE r.ord = i.ord) AS alive
      ${mayBeRemote ? Prisma.sql`, (SELECT t.uri IS NULL FROM target t WHERE t.ord = i.ord) AS local` : Prisma.empty}
    FROM input i ORDER BY i.ord`;
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
