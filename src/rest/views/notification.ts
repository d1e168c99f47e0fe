// The documented notification and announcement (docs/notifications.md#shape) and conversation
// entry (docs/timelines.md#conversations), and their views.
import { z } from "zod";
import { Prisma } from "../../db/client.ts";
import type { PublicAccount } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import type * as notifications from "../../domain/notifications/service.ts";
import type * as timelines from "../../domain/timelines/service.ts";
import { NotificationType } from "../../generated/prisma/enums.ts";
import { ACCOUNT_SUMMARY, AccountSummaryShape } from "../../http/views/account.ts";
import { named, Snowflake, Timestamp, Url, wireObject } from "../../http/views/wire.ts";
import { ACCOUNT } from "../../projection/account.ts";
import { column, viewerOf } from "../../projection/field.ts";
import { NOTIFICATION } from "../../projection/notification.ts";

type Notified = notifications.NotificationsPage["notifications"][number];

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

const ConversationAccountShape = z.strictObject({
  accountId: Snowflake,
  accountName: z.string(),
  nickname: z.string(),
  avatar: Url,
});

export const ConversationEntryShape = named(
  "ConversationEntry",
  "An account the caller exchanged direct notes with (camelCase as documented; see docs/timelines.md#conversations).",
  z.strictObject({
    account: ConversationAccountShape,
    updatedAt: Timestamp,
    lastNoteId: Snowflake.describe(
      "extension: the newest direct note between the two; `before_id` takes it to page further",
    ),
  }),
);

/** Who caused a notification: its account's summary, or the system. */
const ACTOR = column(
  (n: Notified, v): z.infer<typeof ActorShape> =>
    n.actor ? { type: "account", account: ACCOUNT_SUMMARY.view(n.actor, v) } : { type: "system", system: {} },
  (t, v) =>
    Prisma.sql`COALESCE(${NOTIFICATION.actor.sql(
      t,
      (a) => Prisma.sql`json_build_object('type', 'account', 'account', ${ACCOUNT_SUMMARY.sql(a, v)})`,
      v,
    )}, json_build_object('type', 'system', 'system', '{}'::json))`,
);

const NOTIFICATION_WIRE = wireObject<Notified, typeof NotificationShape>(NotificationShape, {
  id: NOTIFICATION.id,
  type: NOTIFICATION.type,
  actor: ACTOR,
  noteId: NOTIFICATION.noteId,
  content: NOTIFICATION.content,
  listId: NOTIFICATION.listId,
  reportId: NOTIFICATION.reportId,
  createdAt: NOTIFICATION.createdAt,
});

const CONVERSATION_ACCOUNT = wireObject<PublicAccount, typeof ConversationAccountShape>(ConversationAccountShape, {
  accountId: ACCOUNT.id,
  accountName: ACCOUNT.name,
  nickname: ACCOUNT.nickname,
  avatar: ACCOUNT.avatar,
});

export function notificationsPageView(
  ctx: Context,
  page: notifications.NotificationsPage,
): z.infer<typeof NotificationsPageShape> {
  const viewer = viewerOf(ctx);
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
    notifications: page.notifications.map((n) => NOTIFICATION_WIRE.view(n, viewer)),
  };
}

export function conversationEntryView(
  ctx: Context,
  { account, updatedAt, lastNoteId }: timelines.Conversation,
): z.infer<typeof ConversationEntryShape> {
  return {
    account: CONVERSATION_ACCOUNT.view(account, viewerOf(ctx)),
    updatedAt: updatedAt.toISOString(),
    lastNoteId: lastNoteId.toString(),
  };
}
