// One live stream (CONTRACT 12): the events for one client, in order, as an async iterable that
// both SSE and GraphQL subscriptions read. Bounded: a client that does not keep up is ended
// (it resumes with Last-Event-ID) rather than grow the server's memory.

import type { Notification } from "../../generated/prisma/client.ts";
import type { PublicAccount } from "../accounts/service.ts";
import type { NoteView } from "../notes/service.ts";
import type { AnnouncementView } from "../notifications/service.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";

export type StreamKind = "home" | "global" | "list" | "notifications";

export type LiveEvent =
  | { event: "note"; id: bigint; note: NoteView }
  | { event: "delete"; id: bigint }
  | { event: "notification"; id: bigint; notification: Notification & { actor: PublicAccount | null } }
  | { event: "announcement"; id: bigint; announcement: AnnouncementView };

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
  /** What replay() sent, as `event:id`. */
  private replayed?: Set<string>;

  constructor(
    readonly kind: StreamKind,
    readonly viewer: CallerAccount | undefined,
    readonly ip: string | undefined,
    readonly listId?: bigint,
    /** When its credentials were issued: it ends when its account's tokens are revoked after. */
    readonly issuedAt?: Date,
  ) {}

  get ended(): EndReason | undefined {
    return this.endedBy;
  }

  push(event: LiveEvent): void {
    if (this.endedBy) return;
    // Heard late (its notice came after the replay had read it): sent already.
    if (event.event !== "delete" && this.replayed?.has(`${event.event}:${event.id}`)) return;
    if (this.sink) {
      this.sink(event);
      return;
    }
    this.queue.push(event);
    if (this.queue.length > MAX_QUEUED) this.end("slow");
    this.wake?.();
  }

  /**
   * Puts what the client missed (oldest first) before the events heard meanwhile, leaving out
   * those the replay holds already, now or when heard later: no gap, no duplicate.
   */
  replay(missed: LiveEvent[]): void {
    const replayed = new Set(missed.map((e) => `${e.event}:${e.id}`));
    this.queue = [...missed, ...this.queue.filter((e) => e.event === "delete" || !replayed.has(`${e.event}:${e.id}`))];
    // Kept for events heard after this (at most a replay page of keys, resumed streams only).
    this.replayed = replayed;
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
