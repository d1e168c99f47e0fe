// Live updates in GraphQL (docs/live.md#subscriptions): the same streams as /streaming/...
// (src/domain/live), served over SSE by yoga and over WebSocket by graphql-ws (websocket.ts). Opening
// one does every refusal first, thrown as the request's error; a stream that ends (token expiry,
// freeze, shutdown) completes its subscription. Announcements are not among `notifications`'
// events: the field yields Notification, and they stay on /streaming/notifications and
// `announcements`.

import { createSourceEventStream, type ExecutionArgs, execute } from "graphql";
import { isAsyncIterable, mapAsyncIterator, type Plugin } from "graphql-yoga";
import type { Context } from "../domain/context.ts";
import { openStream } from "../domain/live/service.ts";
import type { LiveEvent, LiveStream, StreamKind } from "../domain/live/stream.ts";
import { builder } from "./builder.ts";
import { NoteRef } from "./note.ts";
import { NotificationRef } from "./notification.ts";

/**
 * The events of `stream` that `pick` keeps. Its return() (the client unsubscribed or went away)
 * ends the stream at once: an async generator waiting for the next event would hear of it only
 * when one came, and until then the stream would still count against its account's 20.
 */
function eventsOf<T>(stream: LiveStream, pick: (event: LiveEvent) => T | undefined): AsyncIterableIterator<T> {
  const events = stream[Symbol.asyncIterator]();
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      for (;;) {
        const step = await events.next();
        if (step.done) return { done: true, value: undefined };
        const value = pick(step.value);
        if (value !== undefined) return { done: false, value };
      }
    },
    async return() {
      stream.end("closed");
      await events.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

async function live<T>(ctx: Context, kind: StreamKind, pick: (event: LiveEvent) => T | undefined, listId?: string) {
  return eventsOf(await openStream(ctx, kind, { listId }), pick);
}

// A timeline's `delete` events have no Note to yield.
const noteOf = (event: LiveEvent) => (event.event === "note" ? event.note : undefined);
const notificationOf = (event: LiveEvent) => (event.event === "notification" ? event.notification : undefined);

builder.subscriptionType({
  description: "Live updates: what the matching /streaming/... stream sends, as it happens.",
});

builder.subscriptionFields((t) => ({
  homeTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the caller's home timeline.",
    subscribe: (_root, _args, ctx) => live(ctx, "home", noteOf),
    resolve: (note) => note,
  }),
  globalTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the global timeline.",
    subscribe: (_root, _args, ctx) => live(ctx, "global", noteOf),
    resolve: (note) => note,
  }),
  listTimeline: t.field({
    type: NoteRef,
    description: "Each note that now belongs on the list's timeline (a public list, or one's own).",
    args: { id: t.arg.id({ required: true }) },
    subscribe: (_root, args, ctx) => live(ctx, "list", noteOf, String(args.id)),
    resolve: (note) => note,
  }),
  notifications: t.field({
    type: NotificationRef,
    description: "Each new notification of the caller (announcements come over /streaming/notifications).",
    subscribe: (_root, _args, ctx) => live(ctx, "notifications", notificationOf),
    resolve: (notification) => notification,
  }),
}));

/**
 * Each event of a subscription is resolved with a context of its own (a shallow copy of the
 * subscription's): the dataloaders of note.ts (renote, replyTo) keep what they loaded for as long
 * as their context lives, which for a subscription is hours, so one context would hold every note
 * it ever loaded and show each as it was then, visibility included.
 */
export function useContextPerEvent(): Plugin {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(async (args: ExecutionArgs) => {
        const events = await createSourceEventStream(args);
        if (!isAsyncIterable(events)) return events;
        return mapAsyncIterator(events, (payload) =>
          execute({ ...args, rootValue: payload, contextValue: { ...(args.contextValue as object) } }),
        );
      });
    },
  };
}
