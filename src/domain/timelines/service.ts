// Timelines (spec 4.6; CONTRACT 6): home, global, an account's, and direct conversations.

import type { Prisma } from "../../db/client.ts";
import { snowflakeTime } from "../../db/snowflake.ts";
import type { Account } from "../../generated/prisma/client.ts";
import { findAccount } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { NoteView } from "../notes/service.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import { isBlocking } from "../social/service.ts";
import { notePage, type TimelineQuery } from "./page.ts";

/** `home`: the caller's notes and its followees', direct ones apart. `global`: public notes. */
export async function timeline(ctx: Context, type: string, query: TimelineQuery): Promise<NoteView[]> {
  if (type === "global") return notePage(ctx, optionalAccount(ctx), { visibility: "public" }, query);
  if (type !== "home") throw new DomainError("INVALID_TIMELINE_TYPE");
  const me = requireAccount(ctx);
  return notePage(ctx, me, { AND: [await homeScope(ctx, me), { visibility: { not: "direct" } }] }, query);
}

/** Past this many followees, the home timeline checks follows in SQL rather than by a list of ids. */
const DENSE_FOLLOWING = 200;

/**
 * The authors of a home timeline: the caller and its followees. Few followees are fetched and
 * listed (an index scan per author); many are checked in SQL against follows' primary key as
 * the newest notes are walked, which stops after a page, without moving thousands of ids.
 */
async function homeScope(ctx: Context, me: Account): Promise<Prisma.NoteWhereInput> {
  if (me.followingCount > DENSE_FOLLOWING) {
    return { OR: [{ authorId: me.id }, { author: { followers: { some: { followerId: me.id } } } }] };
  }
  const followees = await ctx.db.follow.findMany({ where: { followerId: me.id }, select: { followeeId: true } });
  return { authorId: { in: [me.id, ...followees.map((f) => f.followeeId)] } };
}

/** An account's notes the caller may see, direct ones apart; refused to those it blocks. */
export async function accountTimeline(ctx: Context, nameOrId: string, query: TimelineQuery): Promise<NoteView[]> {
  const viewer = optionalAccount(ctx);
  const account = await findAccount(ctx, nameOrId);
  if (viewer && (await isBlocking(ctx.db, account.id, viewer.id))) throw new DomainError("YOU_ARE_BLOCKED");
  return notePage(ctx, viewer, { authorId: account.id, visibility: { not: "direct" } }, query);
}

export interface Conversation {
  account: Account;
  updatedAt: Date;
}

const CONVERSATIONS = 100;

/** One entry per account the caller exchanged direct notes with, most recent first. */
export async function conversations(ctx: Context): Promise<Conversation[]> {
  const me = requireAccount(ctx);
  const latest = await ctx.db.$queryRaw<{ partner: bigint; last: bigint }[]>`
    SELECT partner, max(id) AS last FROM (
      SELECT send_to_id AS partner, id FROM notes
        WHERE author_id = ${me.id} AND visibility = 'direct' AND send_to_id IS NOT NULL
      UNION ALL
      SELECT author_id AS partner, id FROM notes
        WHERE send_to_id = ${me.id} AND visibility = 'direct'
    ) AS exchanged
    GROUP BY partner ORDER BY last DESC LIMIT ${CONVERSATIONS}`;
  const accounts = await ctx.db.account.findMany({ where: { id: { in: latest.map((r) => r.partner) } } });
  const byId = new Map(accounts.map((a) => [a.id, a]));
  return latest.flatMap((r) => {
    const account = byId.get(r.partner);
    return account ? [{ account, updatedAt: snowflakeTime(r.last) }] : [];
  });
}

/** The direct notes between the caller and one account, newest first. */
export async function conversation(ctx: Context, nameOrId: string, query: TimelineQuery): Promise<NoteView[]> {
  const me = requireAccount(ctx);
  const other = await findAccount(ctx, nameOrId);
  return notePage(
    ctx,
    me,
    {
      visibility: "direct",
      OR: [
        { authorId: me.id, sendToId: other.id },
        { authorId: other.id, sendToId: me.id },
      ],
    },
    { beforeId: query.beforeId, limit: query.limit },
  );
}
