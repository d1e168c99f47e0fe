// Live streams as Server-Sent Events (docs/live.md#streams). Refusals come before the stream, as
// any route's errors; then each event carries what the matching endpoint returns, built by its
// view.
import { z } from "zod";
import type { Context } from "../../domain/context.ts";
import type { ErrorCode } from "../../domain/errors.ts";
import { openStream } from "../../domain/live/service.ts";
import type { LiveEvent, LiveStream, StreamKind } from "../../domain/live/stream.ts";
import { EVENT_STREAM_HEADERS, eventFrame, writeEvents } from "../../http/sse.ts";
import { type Auth, route } from "../route.ts";
import { fullNoteView } from "../views/note.ts";
import { notificationsPageView } from "../views/notification.ts";

const EVENTS = {
  home: "`note` for each note that now belongs on the caller's home timeline, `delete` for a deleted note",
  global: "`note` for each note that now belongs on the global timeline, `delete` for a deleted one",
  list: "`note` for each note that now belongs on the list's timeline, `delete` for a deleted note",
  notifications: "`notification` for each new notification, `announcement` for each new announcement",
};

/**
 * An event as written, built once for all the streams it goes to (as JSON, then as bytes): a
 * view depends on the caller only through its own reaction, and a note is announced as it is
 * created, before anyone reacted.
 */
const built = new WeakMap<LiveEvent, Buffer>();
function frameOnce(ctx: Context, event: LiveEvent): Buffer {
  let frame = built.get(event);
  if (frame === undefined) {
    frame = eventFrame(event, JSON.stringify(dataOf(ctx, event)));
    built.set(event, frame);
  }
  return frame;
}

/** Each event's data: the note, notification or announcement exactly as its endpoint returns it. */
function dataOf(ctx: Context, event: LiveEvent): unknown {
  switch (event.event) {
    case "note":
      return fullNoteView(ctx, event.note);
    case "delete":
      return { id: event.id.toString() };
    case "notification":
      return notificationsPageView(ctx, { announcements: [], notifications: [event.notification] }).notifications[0];
    case "announcement":
      return notificationsPageView(ctx, { announcements: [event.announcement], notifications: [] }).announcements[0];
  }
}

function streamRoute(path: string, kind: StreamKind, auth: Auth, errors: ErrorCode[]) {
  return route({
    method: "GET",
    path,
    operationId: `stream${kind[0].toUpperCase()}${kind.slice(1)}`,
    summary: `Live ${kind === "list" ? "list timeline" : kind} events as Server-Sent Events`,
    tag: "streaming",
    auth,
    tokenInQuery: true,
    params: kind === "list" ? z.object({ list_id: z.string() }) : undefined,
    query: z.object({
      access_token: z.string().optional().describe("credentials, for clients that cannot send a header"),
      last_event_id: z.string().optional().describe("as the Last-Event-ID header: resume after this event"),
    }),
    headers: ["last-event-id"],
    success: {
      status: 200,
      description:
        `text/event-stream: ${EVENTS[kind]}; \`id:\` is the event's id. With Last-Event-ID, first what came ` +
        "after it (oldest first, at most 100). `: ping` at least every 30 s. It ends when the token expires, " +
        "the account is frozen, or the server shuts down; reconnect with Last-Event-ID to miss nothing.",
      events: true,
    },
    errors,
    run: (ctx, { params, query, headers }) =>
      openStream(ctx, kind, {
        listId: (params as { list_id?: string } | undefined)?.list_id,
        lastEventId: headers["last-event-id"] ?? query.last_event_id,
      }),
    reply: (stream: LiveStream, ctx) => ({
      status: 200,
      headers: EVENT_STREAM_HEADERS,
      write: writeEvents(stream, (event) => frameOnce(ctx, event)),
    }),
  });
}

const CREDENTIALS: ErrorCode[] = ["UNAUTHORIZED", "YOU_ARE_FROZEN", "RATE_LIMITED"];

export const streamingRoutes = [
  streamRoute("/streaming/home", "home", "required", CREDENTIALS),
  streamRoute("/streaming/global", "global", "public", ["RATE_LIMITED"]),
  streamRoute("/streaming/lists/:list_id", "list", "required", [...CREDENTIALS, "LIST_NOTFOUND"]),
  streamRoute("/streaming/notifications", "notifications", "required", CREDENTIALS),
];
