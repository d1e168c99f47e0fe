// Reading notifications and announcements (docs/notifications.md#reading).
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Announcement, Notification } from "../../generated/prisma/client.ts";
import { PUBLIC_ACCOUNT_SELECT, type PublicAccount } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { parseBeforeId } from "../paging.ts";
import { requireAccount } from "../sessions/caller.ts";
import { REPLAY_PAGE } from "../timelines/page.ts";

export interface NotificationsQuery {
  limit?: number;
  after?: string;
  includeRead?: boolean;
  /**
   * Only notifications older than this id (REST's `before_id`, GraphQL's cursor), with timelines'
   * paging rules; a later page has no announcements.
   */
  beforeId?: string;
  /** One notification more than `limit`, to tell whether there is a next page. */
  peek?: boolean;
  /**
   * Only these, read or not: what a resumed live stream missed (docs/live.md#resume), REPLAY_PAGE
   * at most.
   */
  ids?: bigint[];
}

export interface AnnouncementView extends Announcement {
  unread: boolean;
}

export interface NotificationsPage {
  announcements: AnnouncementView[];
  /** `actor` null: the system caused it (docs/notifications.md#shape), as for `reported`. */
  notifications: (Notification & { actor: PublicAccount | null })[];
}

export async function listNotifications(ctx: Context, query: NotificationsQuery): Promise<NotificationsPage> {
  const caller = requireAccount(ctx);
  const limit = query.ids === undefined ? (query.limit ?? 30) : REPLAY_PAGE;
  if (query.ids === undefined && (!Number.isInteger(limit) || limit < 1 || limit > 50)) {
    throw new DomainError("INVALID_REQUEST");
  }
  let after = new Date(0);
  if (query.after !== undefined) {
    after = new Date(query.after);
    if (Number.isNaN(after.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(query.after))
      throw new DomainError("INVALID_REQUEST");
  }
  const includeRead = query.includeRead ?? query.ids !== undefined;
  const before = parseBeforeId(query.beforeId);
  const [notifications, announcements] = await Promise.all([
    ctx.db.notification.findMany({
      where: {
        recipientId: caller.id,
        createdAt: { gte: after },
        ...(includeRead ? {} : { readAt: null }),
        id: { lt: before, in: query.ids },
      },
      orderBy: { id: "desc" },
      take: limit + (query.peek ? 1 : 0),
      include: { actor: { select: PUBLIC_ACCOUNT_SELECT } },
    }),
    before === undefined ? announcementsSince(ctx, caller.id, after, includeRead, limit, query.ids) : [],
  ]);
  return { notifications, announcements };
}

/** The announcements from `after` on, unread ones only unless `includeRead`, newest first. */
async function announcementsSince(
  ctx: Context,
  callerId: bigint,
  after: Date,
  includeRead: boolean,
  limit: number,
  ids: bigint[] | undefined,
): Promise<AnnouncementView[]> {
  const announcements = await ctx.db.announcement.findMany({
    where: {
      createdAt: { gte: after },
      id: { in: ids },
      ...(includeRead ? {} : { reads: { none: { accountId: callerId } } }),
    },
    orderBy: { id: "desc" },
    take: limit,
    include: { reads: { where: { accountId: callerId }, select: { accountId: true } } },
  });
  return announcements.map(({ reads, ...a }) => ({ ...a, unread: reads.length === 0 }));
}

/** Marks a notification of the caller's, or an announcement, read. */
export async function markRead(ctx: Context, id: string): Promise<void> {
  const caller = requireAccount(ctx);
  const key = parseSnowflake(id);
  if (key === undefined) throw new DomainError("NOTIFICATION_NOT_FOUND");
  const { count } = await ctx.db.notification.updateMany({
    where: { id: key, recipientId: caller.id },
    data: { readAt: new Date() },
  });
  if (count > 0) return;
  if (await ctx.db.announcement.count({ where: { id: key } })) {
    await ctx.db.announcementRead.createMany({
      data: [{ accountId: caller.id, announcementId: key }],
      skipDuplicates: true,
    });
    return;
  }
  throw new DomainError("NOTIFICATION_NOT_FOUND");
}
