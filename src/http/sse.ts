// A live stream as Server-Sent Events (CONTRACT 12): `event:`, `id:` and one `data:` line of JSON
// per event, a `: ping` comment every PING_MS so that proxies keep an idle stream open. Events are
// taken from the stream only as fast as the client reads them; one that falls behind is cut off
// by the stream's own bound (it resumes with Last-Event-ID), so a slow client costs bounded memory.
import { once } from "node:events";
import { PassThrough, type Readable } from "node:stream";
import type { LiveEvent, LiveStream } from "../domain/live/stream.ts";

const PING_MS = 15_000;

export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  // nginx would otherwise hold events back in its buffer.
  "x-accel-buffering": "no",
  // The connection ends with the stream: an idle keep-alive socket would hold a shutdown back.
  connection: "close",
};

/** `data` is the event's JSON text, as the matching endpoint returns it. */
export function eventStream(stream: LiveStream, data: (event: LiveEvent) => string): Readable {
  const out = new PassThrough();
  const ping = setInterval(() => out.write(": ping\n\n"), PING_MS);
  ping.unref();
  out.on("close", () => {
    clearInterval(ping);
    stream.end("closed");
  });
  // An ended stream ends the answer; a client cut off for being slow is not waited for.
  const ended = new Promise<void>((resolve) =>
    stream.onEnd((reason) => {
      if (reason === "slow") out.destroy();
      else out.end();
      resolve();
    }),
  );
  // The headers and a first line go out at once: the client knows it is subscribed.
  out.write(": subscribed\n\n");
  (async () => {
    for await (const event of stream) {
      if (out.writableEnded || out.destroyed) break;
      const id = event.event === "delete" ? "" : `id: ${event.id}\n`;
      if (!out.write(`event: ${event.event}\n${id}data: ${data(event)}\n\n`)) {
        await Promise.race([once(out, "drain"), ended]);
      }
    }
  })().catch(() => out.destroy());
  return out;
}
