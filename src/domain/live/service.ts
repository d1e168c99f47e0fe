// Opening a live stream (CONTRACT 12): who may, and what it first sends when resumed. Refusals
// come here, before the stream, as any operation's errors. Replays are the timelines' own pages
// of the notes the journal holds between the client's last event and where the stream begins,
// so a stream shows exactly what its timeline would.
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { listNotes, readableList } from "../lists/service.ts";
import { listNotifications } from "../notifications/service.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import { REPLAY_PAGE } from "../timelines/page.ts";
import { timeline } from "../timelines/service.ts";
import {
  isAfter,
  notesCreatedBetween,
  notificationsBetween,
  type Position,
  positionOf,
  positionsOf,
} from "./journal.ts";
import { type LiveEvent, LiveStream, type StreamKind } from "./stream.ts";

export interface StreamOptions {
  listId?: string;
  /** The last event the client had (Last-Event-ID): what came after it is sent first. */
  lastEventId?: string;
}

export async function openStream(ctx: Context, kind: StreamKind, options: StreamOptions = {}): Promise<LiveStream> {
  const viewer = kind === "global" ? optionalAccount(ctx) : requireAccount(ctx);
  const list = kind === "list" ? await readableList(ctx, options.listId ?? "") : undefined;
  let lastEventId: bigint | undefined;
  if (options.lastEventId !== undefined && options.lastEventId !== "") {
    lastEventId = parseSnowflake(options.lastEventId);
    if (lastEventId === undefined) throw new DomainError("INVALID_REQUEST");
  }
  const hub = ctx.live;
  if (!hub) throw new DomainError("SERVICE_UNAVAILABLE");
  // The journal is the primary's: a replica may not have the replay's events yet.
  const primary = { ...ctx, db: hub.db };
  const after = lastEventId === undefined ? undefined : await positionOf(hub.db, lastEventId);
  const stream = new LiveStream(kind, viewer, ctx.caller.ip, list?.id, ctx.caller.issuedAt, after);
  // Events after `from` go to the stream as they are read; the replay is what came between.
  const from = await hub.add(stream);
  try {
    if (after && isAfter(from, after)) stream.replay(await missed(primary, stream, after, from));
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

/**
 * What the stream would have sent after `after` up to `upTo`: the newest REPLAY_PAGE of it, in
 * the journal's order. Timelines pick the notes with their own rules.
 */
async function missed(ctx: Context, stream: LiveStream, after: Position, upTo: Position): Promise<LiveEvent[]> {
  if (stream.kind === "notifications") {
    const events = await notificationsBetween(ctx.db, requireAccount(ctx).id, after, upTo, REPLAY_PAGE);
    const page = await listNotifications(ctx, { ids: events.map((e) => e.refId) });
    const found = new Map<bigint, LiveEvent>();
    for (const notification of page.notifications) {
      const at = events.find((e) => e.refId === notification.id)?.at as Position;
      found.set(notification.id, { event: "notification", id: notification.id, notification, at });
    }
    for (const announcement of page.announcements) {
      const at = events.find((e) => e.refId === announcement.id)?.at as Position;
      found.set(announcement.id, { event: "announcement", id: announcement.id, announcement, at });
    }
    return inJournalOrder([...found.values()]);
  }
  const query = { missed: notesCreatedBetween(after, upTo), limit: REPLAY_PAGE };
  const notes =
    stream.kind === "list"
      ? await listNotes(ctx, String(stream.listId), query)
      : await timeline(ctx, stream.kind, query);
  const positions = await positionsOf(
    ctx.db,
    notes.map((note) => note.id),
  );
  return inJournalOrder(
    notes.flatMap((note) => {
      const at = positions.get(note.id);
      return at ? [{ event: "note" as const, id: note.id, note, at }] : [];
    }),
  );
}

const inJournalOrder = (events: LiveEvent[]) => events.sort((a, b) => (isAfter(a.at, b.at) ? 1 : -1));
