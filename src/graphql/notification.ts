// Notifications and announcements.
import * as notifications from "../domain/notifications/service.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";

const NotificationTypeEnum = builder.enumType("NotificationType", {
  values: ["followed", "followRequested", "followAccepted", "mentioned", "renoted", "reacted", "listed"] as const,
});

type NotificationRow = notifications.NotificationsPage["notifications"][number];

const Notification = builder.objectRef<NotificationRow>("Notification").implement({
  fields: (t) => ({
    id: t.id({ resolve: (n) => n.id.toString() }),
    type: t.field({ type: NotificationTypeEnum, resolve: (n) => n.type }),
    actor: t.field({ type: AccountRef, resolve: (n) => n.actor }),
    noteId: t.id({ nullable: true, resolve: (n) => n.noteId?.toString() ?? null }),
    content: t.string({ nullable: true, resolve: (n) => n.content }),
    listId: t.id({ nullable: true, resolve: (n) => n.listId?.toString() ?? null }),
    read: t.boolean({ resolve: (n) => n.readAt !== null }),
    createdAt: t.string({ resolve: (n) => n.createdAt.toISOString() }),
  }),
});

const Announcement = builder.objectRef<notifications.AnnouncementView>("Announcement").implement({
  fields: (t) => ({
    id: t.id({ resolve: (a) => a.id.toString() }),
    title: t.exposeString("title"),
    description: t.exposeString("description"),
    type: t.exposeString("type", { description: "info or warn" }),
    createdAt: t.string({ resolve: (a) => a.createdAt.toISOString() }),
    updatedAt: t.string({ nullable: true, resolve: (a) => a.updatedAt?.toISOString() ?? null }),
    unread: t.exposeBoolean("unread"),
  }),
});

const NotificationsPage = builder.objectRef<notifications.NotificationsPage>("NotificationsPage").implement({
  fields: (t) => ({
    announcements: t.field({ type: [Announcement], resolve: (p) => p.announcements }),
    notifications: t.field({ type: [Notification], resolve: (p) => p.notifications }),
  }),
});

builder.queryFields((t) => ({
  notifications: t.field({
    type: NotificationsPage,
    errors: {},
    args: {
      limit: t.arg.int({ description: "1 to 50, default 30" }),
      after: t.arg.string({ description: "ISO date: only what came from then on" }),
      includeRead: t.arg.boolean(),
    },
    resolve: (_root, args, ctx) =>
      notifications.listNotifications(ctx, {
        limit: args.limit ?? undefined,
        after: args.after ?? undefined,
        includeRead: args.includeRead ?? undefined,
      }),
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
