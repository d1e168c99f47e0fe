// Routes of notifications and announcements (spec 4.8; CONTRACT 9).
import { z } from "zod";
import type { Context } from "../../domain/context.ts";
import * as notifications from "../../domain/notifications/service.ts";
import { route } from "../route.ts";
import { accountSummaryView } from "../views.ts";

const booleanText = z.enum(["true", "false"]).transform((v) => v === "true");
const integerText = z
  .string()
  .regex(/^[0-9]{1,3}$/)
  .transform(Number);

function pageView(ctx: Context, page: notifications.NotificationsPage) {
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
      actor: {
        type: "account",
        account: accountSummaryView(ctx, n.actor),
      },
      ...(n.noteId === null ? {} : { noteId: n.noteId.toString() }),
      ...(n.content === null ? {} : { content: n.content }),
      ...(n.listId === null ? {} : { listId: n.listId.toString() }),
      createdAt: n.createdAt.toISOString(),
    })),
  };
}

export const notificationRoutes = [
  route({
    method: "GET",
    path: "/notifications",
    summary: "Notifications, newest first, with the instance's announcements",
    tag: "notifications",
    auth: "required",
    query: z.object({
      limit: integerText.optional(),
      after: z.string().optional(),
      include_read: booleanText.optional(),
    }),
    success: { status: 200, description: "announcements and notifications" },
    errors: ["INVALID_REQUEST"],
    run: (ctx, { query }) =>
      notifications.listNotifications(ctx, { limit: query.limit, after: query.after, includeRead: query.include_read }),
    reply: (page, ctx) => ({ status: 200, body: pageView(ctx, page) }),
  }),
  route({
    method: "POST",
    path: "/notifications/:id/read",
    summary: "Mark a notification or an announcement read",
    tag: "notifications",
    auth: "required",
    params: z.object({ id: z.string() }),
    body: z.unknown(),
    success: { status: 204, description: "read" },
    errors: ["NOTIFICATION_NOT_FOUND"],
    run: (ctx, { params }) => notifications.markRead(ctx, params.id),
    reply: () => ({ status: 204 }),
  }),
];
