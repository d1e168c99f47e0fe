// Timelines (docs/timelines.md#timelines): home, global, an account's, and direct conversations.

import { Prisma } from "../../db/client.ts";
import { snowflakeTime } from "../../db/snowflake.ts";
import { findPublicAccount, PUBLIC_ACCOUNT_SELECT, type PublicAccount } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { unsilencedSql } from "../instances/silence.ts";
import type { NoteView } from "../notes/service.ts";
import { audienceSql, authorDeletedSql, unfrozenSql, unmutedSql, type Viewer } from "../notes/visibility.ts";
import { parseBeforeId } from "../paging.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";
import { isBlocking } from "../social/service.ts";
import { authorsPage, type NoteLoader, notesWhere, noteViews, type TimelineQuery } from "./page.ts";

/** `home`: the caller's notes and its followees', direct ones apart. `global`: public notes. */
export async function timeline<T = NoteView>(
  ctx: Context,
  type: string,
  query: TimelineQuery,
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  if (type === "global") {
    const viewer = optionalAccount(ctx);
    const rule = globalRule(viewer, query.federated);
    // Other servers' notes are shown as moderators' policies let them (docs/federation.md#moderation).
    const unsilenced = query.federated ? await unsilencedSql(ctx, viewer) : undefined;
    return notesWhere(ctx, unsilenced ? Prisma.sql`${rule} AND ${unsilenced}` : rule, query, load);
  }
  if (type !== "home") throw new DomainError("INVALID_TIMELINE_TYPE");
  const me = requireAccount(ctx);
  if (me.followingCount > DENSE_FOLLOWING) return notesWhere(ctx, homeRule(me, me), query, load);
  const authors = Prisma.sql`SELECT ${me.id} UNION ALL SELECT followee_id FROM follows WHERE follower_id = ${me.id}`;
  return authorsPage(ctx, me, authors, query, { feed: true }, load);
}

/** Past this many followees, the home timeline checks follows as it walks the newest notes. */
const DENSE_FOLLOWING = 200;

/**
 * Whether note `n` is on the global timeline: public notes, from the (visibility, id) index; this
 * server's only (`uri` is null) unless `federated`. The walk reads each row it returns anyway, so
 * the check of `uri` costs nothing while remote notes are few among the public ones.
 */
export function globalRule(viewer: CallerAccount | undefined, federated = false): Prisma.Sql {
  const local = federated ? Prisma.empty : Prisma.sql`AND n.uri IS NULL`;
  return Prisma.sql`n.visibility = 'public' ${local} AND ${audienceSql(viewer)} ${unfrozenSql(viewer)}`;
}

/**
 * Whether note `n` is on `me`'s home timeline, as a condition: a page for an account following
 * many walks the newest notes by primary key and looks each author up in follows' index, stopping
 * after a page (few followees are read author by author instead: authorsPage); live updates ask
 * it of one note for every home stream at once, `me.id` a column. A muted author's notes are
 * left out by one probe of the mutes' primary key per note walked. Written in SQL because the
 * planner turns Prisma's EXISTS into a hash of every followee, built per request (12 ms for
 * 5,000 followees against 0.7 ms here). test/home-strategies.test.ts checks both strategies
 * give the same answers.
 */
export function homeRule(me: Viewer, role: Pick<CallerAccount, "role"> | undefined): Prisma.Sql {
  return Prisma.sql`n.visibility <> 'direct'
    AND (n.author_id = ${me.id}
      OR (SELECT true FROM follows f WHERE f.follower_id = ${me.id} AND f.followee_id = n.author_id))
    AND ${audienceSql(me)} ${unfrozenSql(role)} ${unmutedSql(me)}`;
}

/**
 * Whether `me`'s home timeline may have shown the deleted note `n`: homeRule, where what the
 * deletion of its author's account removed meanwhile (the follows, its unfrozen state) counts as
 * still there, and mutes aside (a muted author's deletion tells nothing).
 */
export function homeMayHaveShown(me: Viewer): Prisma.Sql {
  return Prisma.sql`n.visibility <> 'direct' AND (n.author_id = ${me.id} OR ${authorDeletedSql}
    OR (SELECT true FROM follows f WHERE f.follower_id = ${me.id} AND f.followee_id = n.author_id))`;
}

/**
 * An account's notes the caller may see, direct ones apart; refused to those it blocks. Shown
 * though the caller muted it: it asked for them (docs/accounts.md#mutes: a mute narrows only its
 * feeds).
 */
export async function accountTimeline<T = NoteView>(
  ctx: Context,
  nameOrId: string,
  query: TimelineQuery,
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  const viewer = optionalAccount(ctx);
  const account = await findPublicAccount(ctx, nameOrId);
  if (viewer && (await isBlocking(ctx.db, account.id, viewer.id))) throw new DomainError("YOU_ARE_BLOCKED");
  return authorsPage(ctx, viewer, account.id, query, { feed: false }, load);
}

export interface Conversation {
  account: PublicAccount;
  updatedAt: Date;
  /** The newest direct note between the two: where the entry stands in the list. */
  lastNoteId: bigint;
}

/** Entries a page of conversations holds: how many accounts one exchanges with is others' to grow. */
export const CONVERSATIONS_PAGE = 100;

/**
 * One entry per account the caller exchanged direct notes with, most recent first,
 * CONVERSATIONS_PAGE a page. `beforeId` (an entry's `lastNoteId`) starts below that entry, with
 * timelines' paging rules (docs/timelines.md#bounded-lists: REST had answered the first 100 with no
 * way to the rest). An account the caller muted has no entry.
 */
export async function conversations(
  ctx: Context,
  page: { beforeId?: string; limit?: number } = {},
): Promise<Conversation[]> {
  const me = requireAccount(ctx);
  const before = parseBeforeId(page.beforeId);
  const latest = await ctx.db.$queryRaw<{ partner: bigint; last: bigint }[]>`
    SELECT partner, max(id) AS last FROM (
      SELECT send_to_id AS partner, id FROM notes
        WHERE author_id = ${me.id} AND visibility = 'direct' AND send_to_id IS NOT NULL
      UNION ALL
      SELECT author_id AS partner, id FROM notes
        WHERE send_to_id = ${me.id} AND visibility = 'direct'
    ) AS exchanged
    WHERE true ${unmutedSql(me, Prisma.sql`partner`)}
    GROUP BY partner ${before === undefined ? Prisma.empty : Prisma.sql`HAVING max(id) < ${before}`}
    ORDER BY last DESC LIMIT ${Math.min(page.limit ?? CONVERSATIONS_PAGE, CONVERSATIONS_PAGE + 1)}`;
  const accounts = await ctx.db.account.findMany({
    where: { id: { in: latest.map((r) => r.partner) }, deletedAt: null },
    select: PUBLIC_ACCOUNT_SELECT,
  });
  const byId = new Map(accounts.map((a) => [a.id, a]));
  return latest.flatMap((r) => {
    const account = byId.get(r.partner);
    return account ? [{ account, updatedAt: snowflakeTime(r.last), lastNoteId: r.last }] : [];
  });
}

/** The direct notes between the caller and one account, newest first; a muted one's left out. */
export async function conversation(ctx: Context, nameOrId: string, query: TimelineQuery): Promise<NoteView[]> {
  const me = requireAccount(ctx);
  const other = await findPublicAccount(ctx, nameOrId);
  return notesWhere(
    ctx,
    Prisma.sql`n.visibility = 'direct'
      AND ((n.author_id = ${me.id} AND n.send_to_id = ${other.id}) OR (n.author_id = ${other.id} AND n.send_to_id = ${me.id}))
      AND ${audienceSql(me)} ${unfrozenSql(me)} ${unmutedSql(me)}`,
    { beforeId: query.beforeId, limit: query.limit },
  );
}
