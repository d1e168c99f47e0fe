// A live stream's own rules (docs/live.md#resume), without a server: a resumed stream's replay
// before what was heard meanwhile, each once; a client that falls behind is cut off, whether it
// reads through the async iterator (GraphQL) or its socket does not take what SSE writes.
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { type LiveEvent, LiveStream, MAX_QUEUED } from "../../src/domain/live/stream.ts";
import { eventFrame, writeEvents } from "../../src/http/sse.ts";

// An event's position in the journal: its transaction's xid, here its id, then a row number.
const at = (xid: number, seq = 1) => ({ xid: BigInt(xid), seq: BigInt(seq) });
const deleted = (id: number, xid = id): LiveEvent => ({ event: "delete", id: BigInt(id), at: at(xid, 2) });
const note = (id: number, xid = id) => ({ event: "note", id: BigInt(id), at: at(xid) }) as unknown as LiveEvent;

/** A response that takes writes without sending them: what a client that stopped reading leaves. */
class StalledResponse extends EventEmitter {
  writableLength = 0;
  written: string[] = [];
  destroyed = false;
  ended = false;
  write(chunk: Buffer | string) {
    this.written.push(chunk.toString());
    this.writableLength += chunk.length;
    return false;
  }
  end() {
    this.ended = true;
  }
  destroy() {
    this.destroyed = true;
  }
}

describe("LiveStream", () => {
  it("sends a replay first, then what was heard meanwhile", async () => {
    const stream = new LiveStream("home", undefined, "127.0.0.1");
    stream.push(deleted(9));
    stream.push(note(3));
    stream.replay([note(1), note(2)]);
    const seen: string[] = [];
    for await (const event of stream) {
      seen.push(`${event.event}:${event.id}`);
      if (seen.length === 4) break;
    }
    expect(seen).toEqual(["note:1", "note:2", "delete:9", "note:3"]);
    expect(stream.ended).toBe("closed");
  });

  it("leaves out of a fresh stream what had committed when it opened, whatever the hub's cursor", () => {
    // Opened while transactions 7 and 9 ran, 10 not yet begun: 3, 5 and 8 had committed.
    const opened = { xmin: 7n, xmax: 10n, running: new Set([7n, 9n]) };
    const stream = new LiveStream("global", undefined, "127.0.0.1", undefined, undefined, undefined, opened);
    const seen: string[] = [];
    stream.attach((event) => seen.push(`${event.event}:${event.id}`));
    for (const xid of [3, 5, 7, 8, 9, 10, 12]) stream.push(note(xid));
    expect(seen).toEqual(["note:7", "note:9", "note:10", "note:12"]);
  });

  it("leaves out what a resumed client had: events at or before its position, whatever their ids", () => {
    const stream = new LiveStream("home", undefined, "127.0.0.1", undefined, undefined, at(5));
    const seen: string[] = [];
    stream.attach((event) => seen.push(`${event.event}:${event.id}`));
    stream.push(note(4));
    stream.push(note(5));
    // A lower id that committed later: after the position.
    stream.push(note(3, 6));
    stream.push(note(7));
    stream.push(deleted(4));
    stream.push(deleted(5, 8));
    expect(seen).toEqual(["note:3", "note:7", "delete:5"]);
  });

  it(`ends a stream whose reader falls more than ${MAX_QUEUED} events behind`, () => {
    const stream = new LiveStream("global", undefined, "127.0.0.1");
    const reasons: string[] = [];
    stream.onEnd((reason) => reasons.push(reason));
    for (let i = 0; i <= MAX_QUEUED; i++) stream.push(note(i));
    expect(stream.ended).toBe("slow");
    expect(reasons).toEqual(["slow"]);
  });
});

describe("Server-Sent Events", () => {
  it("writes each event as `event:`, `id:` and `data:`, and cuts off a client that stopped reading", () => {
    const stream = new LiveStream("global", undefined, "127.0.0.1");
    const response = new StalledResponse();
    writeEvents(stream, (event) => eventFrame(event, JSON.stringify({ id: String(event.id) })))(
      response as unknown as ServerResponse,
    );
    stream.push(note(7));
    stream.push(deleted(7));
    expect(response.written).toEqual([
      ": subscribed\n\n",
      'event: note\nid: 7\ndata: {"id":"7"}\n\n',
      'event: delete\ndata: {"id":"7"}\n\n',
    ]);
    const big = "x".repeat(64 * 1024);
    const bigFrame = (event: LiveEvent) => eventFrame(event, JSON.stringify(big));
    const slow = new LiveStream("global", undefined, "127.0.0.1");
    const stalled = new StalledResponse();
    writeEvents(slow, bigFrame)(stalled as unknown as ServerResponse);
    for (let i = 0; i < 20 && !slow.ended; i++) slow.push(note(i));
    expect(slow.ended).toBe("slow");
    expect(stalled.destroyed).toBe(true);
    expect(stalled.written.length).toBeLessThan(20);
  });
});
