// A live stream as Server-Sent Events (docs/live.md#events): `event:`, `id:` and one `data:` line
// of JSON per event, a `: ping` comment every PING_MS so that proxies keep an idle stream open.
// Each event is written to the socket as it comes; a client that does not read what was written
// (past MAX_BUFFERED bytes) is cut off, and resumes with Last-Event-ID, so a slow client costs
// bounded memory.
import type { ServerResponse } from "node:http";
import type { LiveEvent, LiveStream } from "../domain/live/stream.ts";

const PING_MS = 15_000;
const MAX_BUFFERED = 1024 * 1024;

export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  // nginx would otherwise hold events back in its buffer.
  "x-accel-buffering": "no",
  // The connection ends with the stream: an idle keep-alive socket would hold a shutdown back.
  connection: "close",
};

/** An event as written: `data` is its JSON text, as its endpoint returns it. */
export function eventFrame(event: LiveEvent, data: string): Buffer {
  const id = event.event === "delete" ? "" : `id: ${event.id}\n`;
  return Buffer.from(`event: ${event.event}\n${id}data: ${data}\n\n`);
}

// One timer pings every open stream: a timer each would cost every idle stream its memory.
const open = new Set<ServerResponse>();
setInterval(() => {
  for (const response of open) response.write(": ping\n\n");
}, PING_MS).unref();

/** Writes `stream` to `response`, each event as `frame` has it. */
export function writeEvents(stream: LiveStream, frame: (event: LiveEvent) => Buffer) {
  return (response: ServerResponse): void => {
    open.add(response);
    response.on("close", () => {
      open.delete(response);
      stream.end("closed");
    });
    stream.onEnd((reason) => (reason === "slow" ? response.destroy() : response.end()));
    // A first line at once: the client knows it is subscribed.
    response.write(": subscribed\n\n");
    stream.attach((event) => {
      response.write(frame(event));
      if (response.writableLength > MAX_BUFFERED) stream.end("slow");
    });
  };
}
