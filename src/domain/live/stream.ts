// One live stream (docs/live.md#events): the events for one client, in order, as an async iterable
// that both SSE and GraphQL subscriptions read. Bounded: a client that does not keep up is ended
// (it resumes with Last-Event-ID) rather than grow the server's memory.

import type { Notification } from "../../generated/prisma/client.ts";
import type { PublicAccount } from "../accounts/service.ts";
import type { NoteView } from "../notes/service.ts";
import type { AnnouncementView } from "../notifications/service.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";
import { endedIn, isAfter, type Position, type Snapshot } from "./journal.ts";

export type StreamKind = "home" | "global" | "list" | "notifications";

/** An event, and its position in the journal (src/domain/live/journal.ts). */
export type LiveEvent = { at: Position } & (
  | { event: "note"; id: bigint; note: NoteView }
  | { event: "delete"; id: bigint }
  | { event: "notification"; id: bigint; notification: Notification & { actor: PublicAccount | null } }
  | { event: "announcement"; id: bigint; announcement: AnnouncementView }
);

/** Why a stream ended: the client may reconnect (with Last-Event-ID) after any of them. */
export type EndReason = "closed" | "expired" | "revoked" | "frozen" | "slow" | "shutdown" | "missed";

/** Events waiting for a client past which it is cut off. */
export const MAX_QUEUED = 1_000;

export class LiveStream implements AsyncIterable<LiveEvent> {
  private queue: LiveEvent[] = [];
  private wake?: () => void;
  private endedBy?: EndReason;
  private readonly endings: ((reason: EndReason) => void)[] = [];
  private sink?: (event: LiveEvent) => void;

  constructor(
    readonly kind: StreamKind,
    readonly viewer: CallerAccount | undefined,
    readonly ip: string | undefined,
    readonly listId?: bigint,
    /** When its credentials were issued: it ends when its account's tokens are revoked after. */
    readonly issuedAt?: Date,
    /** Where a resumed stream's client stood: it had every event up to there. */
    readonly after?: Position,
    /**
     * When a fresh stream opened: what had committed then is not sent. The hub's cursor can stand
     * well before (a transaction anywhere in the cluster holds the horizon back).
     */
    readonly opened?: Snapshot,
  ) {}

  get ended(): EndReason | undefined {
    return this.endedBy;
  }

  push(event: LiveEvent): void {
    // Read by this instance later than by the one the client resumed from: sent already.
    if (this.endedBy || (this.after && !isAfter(event.at, this.after))) return;
    if (this.opened && endedIn(this.opened, event.at.xid)) return;
    if (this.sink) {
      this.sink(event);
      return;
    }
    this.queue.push(event);
    if (this.queue.length > MAX_QUEUED) this.end("slow");
    this.wake?.();
  }

  /**
   * Puts what the client missed (oldest first) before the events heard meanwhile: the replay
   * ends where the live events begin (LiveHub.add), so there is no gap and no duplicate.
   */
  replay(missed: LiveEvent[]): void {
    this.queue = [...missed, ...this.queue];
    this.wake?.();
  }

  /**
   * From now on, events go straight to `sink` as they come, those waiting first: for SSE, which
   * writes each to its socket at once (the async iterator costs a promise per event, and 2,000
   * streams of one instance may take 100,000 events a second). Not with the iterator.
   */
  attach(sink: (event: LiveEvent) => void): void {
    this.sink = sink;
    for (const event of this.queue.splice(0)) if (!this.endedBy) sink(event);
  }

  end(reason: EndReason): void {
    if (this.endedBy) return;
    this.endedBy = reason;
    this.queue = [];
    for (const ending of this.endings.splice(0)) ending(reason);
    this.wake?.();
  }

  onEnd(ending: (reason: EndReason) => void): void {
    if (this.endedBy) ending(this.endedBy);
    else this.endings.push(ending);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<LiveEvent> {
    try {
      while (!this.endedBy) {
        const event = this.queue.shift();
        if (event) yield event;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.end("closed");
    }
  }
}
