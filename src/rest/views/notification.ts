// The documented notification and announcement (docs/notifications.md#shape) and conversation
// entry (docs/timelines.md#conversations), and their views.
import { z } from "zod";
import { qualifiedNameOf } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import { fileUrl } from "../../domain/drive/urls.ts";
import type * as notifications from "../../domain/notifications/service.ts";
import type * as timelines from "../../domain/timelines/service.ts";
import { NotificationType } from "../../generated/prisma/enums.ts";
import { AccountSummaryShape, accountSummaryView } from "../../http/views/account.ts";
import { named, Snowflake, Timestamp, Url } from "../../http/views/wire.ts";

export const ActorShape = named(
  "Actor",
  "Who caused a notification: an account, or the system (see docs/notifications.md#shape).",
  z.discriminatedUnion("type", [
    z.strictObject({ type: z.literal("account"), account: AccountSummaryShape }),
    z.strictObject({ type: z.literal("system"), system: z.strictObject({}) }),
  ]),
);

export const NotificationShape = named(
  "Notification",
  "A notification (see docs/notifications.md#shape); `listId` for the extension type `listed`, `reportId` for `reported` (a report to moderators, from the system actor).",
  z.strictObject({
    id: Snowflake,
    type: z.enum(NotificationType),
    actor: ActorShape,
    noteId: Snowflake.optional(),
    content: z.string().optional(),
    listId: Snowflake.optional(),
    reportId: Snowflake.optional(),
    createdAt: Timestamp,
  }),
);

export const AnnouncementShape = named(
  "Announcement",
  "An instance-wide announcement (see docs/notifications.md#announcements).",
  z.strictObject({
    id: Snowflake,
    title: z.string(),
    description: z.string(),
    type: z.enum(["info", "warn"]),
    createdAt: Timestamp,
    updatedAt: Timestamp.optional(),
    unread: z.boolean(),
  }),
);

export const NotificationsPageShape = named(
  "NotificationsPage",
  "Announcements and notifications, newest first (see docs/notifications.md#reading).",
  z.strictObject({ announcements: z.array(AnnouncementShape), notifications: z.array(NotificationShape) }),
);

export const ConversationEntryShape = named(
  "ConversationEntry",
  "An account the caller exchanged direct notes with (camelCase as documented; see docs/timelines.md#conversations).",
  z.strictObject({
    account: z.strictObject({ accountId: Snowflake, accountName: z.string(), nickname: z.string(), avatar: Url }),
    updatedAt: Timestamp,
    lastNoteId: Snowflake.describe(
      "extension: the newest direct note between the two; `before_id` takes it to page further",
    ),
  }),
);

export function notificationsPageView(
  ctx: Context,
  page: notifications.NotificationsPage,
): z.infer<typeof NotificationsPageShape> {
  return {
    announcements: page.announcements.map((a) => ({
      id: a.id.toString(),
      title: a.title,
      description: a.description,
      type: a.type,
      createdAt: a.createdAt.toISOString(),
      ...(a.updatedAt ? { updatedAt: a.updatedAt.toISOString() } : {}),
      unread: a.unread,
    })),
    notifications: page.notifications.map((n) => ({
      id: n.id.toString(),
      type: n.type,
      actor: n.actor
        ? { type: "account" as const, account: accountSummaryView(ctx, n.actor) }
        : { type: "system" as const, system: {} },
      ...(n.noteId === null ? {} : { noteId: n.noteId.toString() }),
      ...(n.content === null ? {} : { content: n.content }),
      ...(n.listId === null ? {} : { listId: n.listId.toString() }),
      ...(n.reportId === null ? {} : { reportId: n.reportId.toString() }),
      createdAt: n.createdAt.toISOString(),
    })),
  };
}

export function conversationEntryView(
  ctx: Context,
  { account, updatedAt, lastNoteId }: timelines.Conversation,
): z.infer<typeof ConversationEntryShape> {
  return {
    account: {
      accountId: account.id.toString(),
      accountName: qualifiedNameOf(ctx, account),
      nickname: account.nickname,
      avatar: fileUrl(ctx.config, account.avatarFileId),
    },
    updatedAt: updatedAt.toISOString(),
    lastNoteId: lastNoteId.toString(),
  };
}
