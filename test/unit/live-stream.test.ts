// A live stream's own rules (CONTRACT 12), without a server: a resumed stream's replay before
// what was heard meanwhile, each once; a client that falls behind is cut off, whether it reads
// through the async iterator (GraphQL) or its socket does not take what SSE writes.
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { type LiveEvent, LiveStream, MAX_QUEUED } from "../../src/domain/live/stream.ts";
import { eventFrame, writeEvents } from "../../src/http/sse.ts";

const deleted = (id: number): LiveEvent => ({ event: "delete", id: BigInt(id) });
const note = (id: number) => ({ event: "note", id: BigInt(id) }) as unknown as LiveEvent;

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
  it("sends a replay first, then what was heard meanwhile, each event once", async () => {
    const stream = new LiveStream("home", undefined, "127.0.0.1");
    stream.push(note(2));
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

  it("leaves out a replayed event whose notice is heard only after the replay (a slow NOTIFY)", () => {
    const stream = new LiveStream("home", undefined, "127.0.0.1");
    stream.replay([note(1), note(2)]);
    const seen: string[] = [];
    stream.attach((event) => seen.push(`${event.event}:${event.id}`));
    stream.push(note(2));
    stream.push(note(3));
    stream.push(deleted(2));
    expect(seen).toEqual(["note:1", "note:2", "note:3", "delete:2"]);
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
