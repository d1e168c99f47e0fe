// Notifications (a connection) and announcements.
import * as notifications from "../domain/notifications/service.ts";
import { NotificationType } from "../generated/prisma/enums.ts";
import { NOTIFICATION } from "../projection/notification.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";
import { AFTER_DESCRIPTION, connectionType, page, pageComplexity } from "./connection.ts";
import { projected } from "./projected.ts";

const NotificationTypeEnum = builder.enumType("NotificationType", {
  values: Object.values(NotificationType),
});

type NotificationRow = notifications.NotificationsPage["notifications"][number];

const AccountActor = builder.objectRef<NonNullable<NotificationRow["actor"]>>("AccountActor").implement({
  description: "An account caused the notification.",
  fields: (t) => ({ account: t.field({ type: AccountRef, resolve: (a) => a }) }),
});

const SystemActor = builder.objectRef<{ system: true }>("SystemActor").implement({
  description: "The instance itself caused the notification (a notice from its moderators).",
  fields: (t) => ({ system: t.boolean({ resolve: () => true }) }),
});

// An actor is an account or the system (docs/notifications.md#shape).
const Actor = builder.unionType("Actor", {
  types: [AccountActor, SystemActor],
  resolveType: (actor) => ("system" in actor ? SystemActor : AccountActor),
});

export const NotificationRef = builder.objectRef<NotificationRow>("Notification");
NotificationRef.implement({
  fields: (t) => ({
    id: t.id(projected(NOTIFICATION.id)),
    type: t.field({ type: NotificationTypeEnum, ...projected(NOTIFICATION.type) }),
    actor: t.field({ type: Actor, resolve: (n) => n.actor ?? { system: true as const } }),
    noteId: t.id({ nullable: true, ...projected(NOTIFICATION.noteId) }),
    content: t.string({ nullable: true, ...projected(NOTIFICATION.content) }),
    listId: t.id({ nullable: true, ...projected(NOTIFICATION.listId) }),
    reportId: t.id({
      nullable: true,
      description: "For `reported`: the report (moderators read it with `reports`).",
      ...projected(NOTIFICATION.reportId),
    }),
    read: t.boolean(projected(NOTIFICATION.read)),
    createdAt: t.field({ type: "DateTime", ...projected(NOTIFICATION.createdAt) }),
  }),
});

const NotificationConnection = connectionType(
  "Notification",
  NotificationRef,
  "A page of notifications, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

const Announcement = builder.objectRef<notifications.AnnouncementView>("Announcement").implement({
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    title: t.exposeString("title"),
    description: t.exposeString("description"),
    type: t.exposeString("type", { description: "info or warn" }),
    createdAt: t.field({ type: "DateTime", resolve: (a) => a.createdAt }),
    updatedAt: t.field({ type: "DateTime", nullable: true, resolve: (a) => a.updatedAt }),
    unread: t.exposeBoolean("unread"),
  }),
});

const NOTIFICATIONS_PAGE = 50;
/** As REST's `limit` without one. */
const NOTIFICATIONS_DEFAULT = 30;

builder.queryFields((t) => ({
  notifications: t.field({
    type: NotificationConnection,
    errors: { directResult: true },
    complexity: pageComplexity(NOTIFICATIONS_PAGE, NOTIFICATIONS_DEFAULT),
    args: {
      first: t.arg.int({ description: `1 to ${NOTIFICATIONS_PAGE}, default ${NOTIFICATIONS_DEFAULT}` }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
      since: t.arg({ type: "DateTime", description: "Only what came from then on" }),
      includeRead: t.arg.boolean(),
    },
    resolve: (_root, args, ctx) =>
      page(
        { first: args.first ?? NOTIFICATIONS_DEFAULT, after: args.after },
        NOTIFICATIONS_PAGE,
        async (after, limit) => {
          const found = await notifications.listNotifications(ctx, {
            limit: limit - 1,
            peek: true,
            beforeId: after,
            after: args.since?.toISOString(),
            includeRead: args.includeRead ?? undefined,
          });
          return found.notifications;
        },
      ),
  }),
  announcements: t.field({
    type: [Announcement],
    errors: {},
    complexity: { field: 1, multiplier: 50 },
    description: "The instance's announcements, newest first (at most 50).",
    args: {
      since: t.arg({ type: "DateTime", description: "Only what came from then on" }),
      includeRead: t.arg.boolean(),
    },
    resolve: async (_root, args, ctx) =>
      (
        await notifications.listNotifications(ctx, {
          limit: NOTIFICATIONS_PAGE,
          after: args.since?.toISOString(),
          includeRead: args.includeRead ?? undefined,
        })
      ).announcements,
  }),
}));

builder.mutationFields((t) => ({
  markRead: t.boolean({
    errors: {},
    description: "Mark a notification or an announcement read.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(notifications.markRead(ctx, args.id.toString())),
  }),
}));
