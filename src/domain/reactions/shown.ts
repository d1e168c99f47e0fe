// The reactions a note shows wherever it is returned (docs/notes.md#bounded-reactions): the newest
// REACTIONS_SHOWN, the caller's own however old, and the count by emoji over all of them, read
// from the counts the reactions' triggers keep (never by counting reactions). A note with
// 100,000 reactions costs a page what a note with 20 costs.
import { Prisma } from "../../db/client.ts";
import type { Reaction } from "../../generated/prisma/client.ts";

export const REACTIONS_SHOWN = 20;

export interface NoteReactions {
  /** The newest REACTIONS_SHOWN reactions, newest first. */
  reactions: Reaction[];
  /** The caller's own reaction, also when older than those; null without one (or a caller). */
  ownReaction: Reaction | null;
  /** The count of every reaction by emoji; an emoji nobody uses any more is absent. */
  reactionCounts: Record<string, number>;
}

/** The reactions a note shows: the newest, with the caller's own in place of the oldest when it is not among them. */
export function shownReactions(n: Pick<NoteReactions, "reactions" | "ownReaction">): Reaction[] {
  const own = n.ownReaction;
  if (!own || n.reactions.some((r) => r.accountId === own.accountId)) return n.reactions;
  return [...n.reactions.slice(0, REACTIONS_SHOWN - 1), own];
}

export function reactionTotal(n: Pick<NoteReactions, "reactionCounts">): number {
  return Object.values(n.reactionCounts).reduce((sum, count) => sum + count, 0);
}

/**
 * The newest `limit` reactions of the note whose id is `noteId` (SQL), newest first, reading no
 * more than `limit` of them however many it has: through the function newest_reactions (migration
 * 20261130110000), an ordered walk of their index that stops there whatever the planner's estimate
 * of the note (inline, a viral note's every reaction had been read and sorted to keep 20); GET
 * /notes/{id}/reactions pages through it. `total`, where the statement has it, is the note's count
 * of reactions (null for none: nothing is read): a note with at most `limit` is asked inline, as
 * any plan reads no more than it has, and the function's call (~5 µs) is left to the others.
 */
export function newestReactions(noteId: Prisma.Sql, limit: number, total?: Prisma.Sql): Prisma.Sql {
  const count = Prisma.raw(String(limit));
  const walked = Prisma.sql`SELECT * FROM newest_reactions(${noteId}, ${count})`;
  if (!total) return walked;
  return Prisma.sql`${walked} WHERE ${total} > ${count}
    UNION ALL (SELECT * FROM reactions WHERE ${total} <= ${count} AND note_id = ${noteId} ORDER BY id DESC LIMIT ${count})`;
}

const reactionJson = (r: string) =>
  Prisma.raw(
    `json_build_object('id', ${r}.id::text, 'accountId', ${r}.account_id::text, 'emoji', ${r}.emoji, 'createdAt', ${r}.created_at)`,
  );

/**
 * The three columns of NoteReactions for the note whose id is `noteId` (SQL), as JSON, to put in
 * a statement that selects notes: each is an index read of at most REACTIONS_SHOWN reactions, one
 * reaction, and the note's count rows.
 */
export function reactionColumns(noteId: Prisma.Sql, viewerId: bigint | undefined): Prisma.Sql {
  return Prisma.sql`
    COALESCE((SELECT json_agg(${reactionJson("r")} ORDER BY r.id DESC)
      FROM (${newestReactions(noteId, REACTIONS_SHOWN)}) r),
      '[]') AS reactions,
    ${
      viewerId === undefined
        ? Prisma.sql`NULL::json`
        : Prisma.sql`(SELECT ${reactionJson("o")} FROM reactions o WHERE o.note_id = ${noteId} AND o.account_id = ${viewerId})`
    } AS "ownReaction",
    COALESCE((SELECT json_object_agg(c.emoji, c.total) FROM (${countsByEmoji(noteId)}) c),
      '{}') AS "reactionCounts"`;
}

/**
 * The note's reaction count by emoji, rows `(emoji, total)`, summed over the rows the triggers
 * keep per emoji; an emoji nobody uses any more is absent.
 */
export function countsByEmoji(noteId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`SELECT emoji, sum(count)::int AS total FROM note_reaction_counts
    WHERE note_id = ${noteId} GROUP BY emoji HAVING sum(count) > 0`;
}

interface ReactionJson {
  id: string;
  accountId: string;
  emoji: string;
  createdAt: string;
}

/** NoteReactions columns as PostgreSQL sends them. */
export interface ReactionColumns {
  reactions: ReactionJson[];
  ownReaction: ReactionJson | null;
  reactionCounts: Record<string, number>;
}

function reactionOf(noteId: bigint, r: ReactionJson): Reaction {
  return { id: BigInt(r.id), noteId, accountId: BigInt(r.accountId), emoji: r.emoji, createdAt: new Date(r.createdAt) };
}

export function parseReactionColumns(noteId: bigint, row: ReactionColumns): NoteReactions {
  return {
    reactions: row.reactions.map((r) => reactionOf(noteId, r)),
    ownReaction: row.ownReaction && reactionOf(noteId, row.ownReaction),
    reactionCounts: row.reactionCounts,
  };
}
