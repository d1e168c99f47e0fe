// Opening a live stream (CONTRACT 12): who may, and what it first sends when resumed. Refusals
// come here, before the stream, as any operation's errors. Replays are the timelines' own pages
// (afterId), so a stream shows exactly what its timeline would.
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { listNotes, readableList } from "../lists/service.ts";
import { listNotifications } from "../notifications/service.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import { REPLAY_PAGE } from "../timelines/page.ts";
import { timeline } from "../timelines/service.ts";
import { type LiveEvent, LiveStream, type StreamKind } from "./stream.ts";

export interface StreamOptions {
  listId?: string;
  /** The last event the client had (Last-Event-ID): what came after it is sent first. */
  lastEventId?: string;
}

export async function openStream(ctx: Context, kind: StreamKind, options: StreamOptions = {}): Promise<LiveStream> {
  const viewer = kind === "global" ? optionalAccount(ctx) : requireAccount(ctx);
  const list = kind === "list" ? await readableList(ctx, options.listId ?? "") : undefined;
  let after: bigint | undefined;
  if (options.lastEventId !== undefined && options.lastEventId !== "") {
    after = parseSnowflake(options.lastEventId);
    if (after === undefined) throw new DomainError("INVALID_REQUEST");
  }
  if (!ctx.live) throw new DomainError("SERVICE_UNAVAILABLE");
  const stream = new LiveStream(kind, viewer, ctx.caller.ip, list?.id, ctx.caller.issuedAt);
  // Heard from now on, before the replay is read: a note committed meanwhile is in one or both,
  // and replay() keeps it once.
  ctx.live.add(stream);
  try {
    if (after !== undefined) stream.replay(await missed(ctx, stream, after));
  } catch (err) {
    stream.end("closed");
    throw err;
  }
  const expiresAt = ctx.caller.expiresAt;
  if (expiresAt) {
    const timer = setTimeout(() => stream.end("expired"), Math.max(0, expiresAt.getTime() - Date.now()));
    timer.unref();
    stream.onEnd(() => clearTimeout(timer));
  }
  return stream;
}

/** What the stream would have sent after `after`: the newest REPLAY_PAGE of it, oldest first. */
async function missed(ctx: Context, stream: LiveStream, after: bigint): Promise<LiveEvent[]> {
  const query = { afterId: after, limit: REPLAY_PAGE };
  if (stream.kind === "notifications") {
    const page = await listNotifications(ctx, { afterId: after, includeRead: true });
    const events: LiveEvent[] = [
      ...page.notifications.map((notification) => ({
        event: "notification" as const,
        id: notification.id,
        notification,
      })),
      ...page.announcements.map((announcement) => ({
        event: "announcement" as const,
        id: announcement.id,
        announcement,
      })),
    ];
    return events.sort((a, b) => (a.id < b.id ? -1 : 1)).slice(-REPLAY_PAGE);
  }
  const notes =
    stream.kind === "list"
      ? await listNotes(ctx, String(stream.listId), query)
      : await timeline(ctx, stream.kind, query);
  return notes.reverse().map((note) => ({ event: "note" as const, id: note.id, note }));
}
