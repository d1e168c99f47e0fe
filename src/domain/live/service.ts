// Opening a live stream (docs/live.md#streams): who may, and what it first sends when resumed.
// Refusals come here, before the stream, as any operation's errors. Replays are the timelines' own
// pages of the notes the journal holds between the client's last event and where the stream begins,
// so a stream shows exactly what its timeline would.
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { listNotes, readableList } from "../lists/service.ts";
import { listNotifications } from "../notifications/service.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import { REPLAY_PAGE } from "../timelines/page.ts";
import { timeline } from "../timelines/service.ts";
import type { LiveHub } from "./hub.ts";
import {
  isAfter,
  journalSnapshot,
  notesCreatedBetween,
  notificationsBetween,
  type Position,
  positionOf,
} from "./journal.ts";
import { type LiveEvent, LiveStream, type StreamKind } from "./stream.ts";

export interface StreamOptions {
  listId?: string;
  /** The last event the client had (Last-Event-ID): what came after it is sent first. */
  lastEventId?: string;
}

/**
 * A request's context with this instance's hub, which the domain's Services leave out (a type
 * naming the hub would import back the services it is built on): an edge's context carries it,
 * spread from the process's services (src/services.ts); without one, SERVICE_UNAVAILABLE.
 */
export type LiveContext = Context & { live?: LiveHub };

export async function openStream(ctx: LiveContext, kind: StreamKind, options: StreamOptions = {}): Promise<LiveStream> {
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
  const opened = after ? undefined : await journalSnapshot(hub.db);
  const stream = new LiveStream(kind, viewer, ctx.caller.ip, list?.id, ctx.caller.issuedAt, after, opened);
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
    if (!events.length) return [];
    const at = new Map(events.map((e) => [e.refId, e.at]));
    const page = await listNotifications(ctx, { ids: [...at.keys()] });
    return inJournalOrder([
      ...page.notifications.map((notification) => ({
        event: "notification" as const,
        id: notification.id,
        notification,
        at: at.get(notification.id) as Position,
      })),
      ...page.announcements.map((announcement) => ({
        event: "announcement" as const,
        id: announcement.id,
        announcement,
        at: at.get(announcement.id) as Position,
      })),
    ]);
  }
  const at = await notesCreatedBetween(ctx.db, after, upTo);
  if (!at.size) return [];
  const query = { missed: [...at.keys()], limit: REPLAY_PAGE };
  const notes =
    stream.kind === "list"
      ? await listNotes(ctx, String(stream.listId), query)
      : await timeline(ctx, stream.kind, query);
  return inJournalOrder(notes.map((note) => ({ event: "note", id: note.id, note, at: at.get(note.id) as Position })));
}

const inJournalOrder = (events: LiveEvent[]) => events.sort((a, b) => (isAfter(a.at, b.at) ? 1 : -1));
