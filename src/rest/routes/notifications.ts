// Routes of notifications and announcements (docs/notifications.md#reading).
import { z } from "zod";
import * as notifications from "../../domain/notifications/service.ts";
import { queryBoolean, queryInteger, querySnowflake } from "../query.ts";
import { route } from "../route.ts";
import { NotificationsPageShape, notificationsPageView } from "../views/notification.ts";

export const notificationRoutes = [
  route({
    method: "GET",
    path: "/notifications",
    operationId: "getNotifications",
    summary: "Notifications, newest first, with the instance's announcements (before_id: extension)",
    tag: "notifications",
    auth: "required",
    query: z.object({
      limit: queryInteger(1, 50).optional(),
      after: z.string().optional().describe("an ISO 8601 date or date-time: only notifications from then on"),
      include_read: queryBoolean.optional(),
      // Extension: only notifications older than this one, timelines' paging rules; no announcements.
      before_id: querySnowflake.optional(),
    }),
    success: { status: 200, description: "announcements and notifications", schema: NotificationsPageShape },
    errors: ["NOTHING_LEFT"],
    run: (ctx, { query }) =>
      notifications.listNotifications(ctx, {
        limit: query.limit,
        after: query.after,
        includeRead: query.include_read,
        beforeId: query.before_id,
      }),
    reply: (page, ctx) => ({ status: 200, body: notificationsPageView(ctx, page) }),
    pageItems: (page) => page.notifications,
  }),
  route({
    method: "POST",
    path: "/notifications/:id/read",
    operationId: "markRead",
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
