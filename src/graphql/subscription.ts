// Live updates in GraphQL (CONTRACT 12): the same streams as /streaming/... (src/domain/live),
// served over SSE by yoga and over WebSocket by graphql-ws (mount.ts). Opening one does every
// refusal first, thrown as the request's error; a stream that ends (token expiry, freeze,
// shutdown) completes its subscription.

import type { Context } from "../domain/context.ts";
import { openStream } from "../domain/live/service.ts";
import type { LiveStream, StreamKind } from "../domain/live/stream.ts";
import type { NoteView } from "../domain/notes/service.ts";
import { builder } from "./builder.ts";
import { NoteRef } from "./note.ts";
import { NotificationRef } from "./notification.ts";

async function* notesOf(stream: LiveStream): AsyncGenerator<NoteView> {
  for await (const event of stream) if (event.event === "note") yield event.note;
}

async function* notificationsOf(stream: LiveStream) {
  for await (const event of stream) if (event.event === "notification") yield event.notification;
}

const timeline = (kind: StreamKind) => async (ctx: Context, listId?: string) =>
  notesOf(await openStream(ctx, kind, { listId }));

builder.subscriptionType({
  description: "Live updates: what the matching /streaming/... stream sends, as it happens.",
});

builder.subscriptionFields((t) => ({
  homeTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the caller's home timeline.",
    subscribe: (_root, _args, ctx) => timeline("home")(ctx),
    resolve: (note) => note,
  }),
  globalTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the global timeline.",
    subscribe: (_root, _args, ctx) => timeline("global")(ctx),
    resolve: (note) => note,
  }),
  listTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the list's timeline (a public list, or one's own).",
    args: { id: t.arg.id({ required: true }) },
    subscribe: (_root, args, ctx) => timeline("list")(ctx, String(args.id)),
    resolve: (note) => note,
  }),
  notifications: t.field({
    type: NotificationRef,
    description: "Each new notification of the caller (announcements come over /streaming/notifications).",
    subscribe: async (_root, _args, ctx) => notificationsOf(await openStream(ctx, "notifications")),
    resolve: (notification) => notification,
  }),
}));
