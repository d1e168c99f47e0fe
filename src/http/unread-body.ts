// An answer given before its request's body was read whole: a JSON body past its limit (Fastify
// answers 413 as soon as the Content-Length, or the bytes so far, pass it), an upload refused
// before its file. Fastify then closes the connection on the unread rest, and a proxy still
// sending it (nginx with proxy_request_buffering off, deploy/nginx.conf) met a broken pipe and
// answered its own HTML 502 instead. So the rest is read and dropped first, up to a bound; past
// it, or said to be past it, the connection is closed at once as before.
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";

/** The most of a request's body read and dropped so that its answer reaches the client. */
export const UNREAD_BODY_DRAINED = 16 * 1024 * 1024;

export function registerUnreadBodyDrain(app: FastifyInstance, limit = UNREAD_BODY_DRAINED): void {
  // A callback, and nothing to wait for when the body was read (every request but a refused one):
  // run by every answer, an async hook cost each a promise and a turn of the microtask queue.
  app.addHook("onSend", (request, _reply, payload, done) => {
    const raw = request.raw;
    if (raw.complete || raw.readableEnded || raw.destroyed) return done(null, payload);
    void drain(raw, limit).then(() => done(null, payload));
  });
}

/** Resolves once `raw`'s body has ended (or never will: closed, or past `limit`). */
function drain(raw: IncomingMessage, limit: number): Promise<void> {
  if (raw.complete || raw.readableEnded || raw.destroyed) return Promise.resolve();
  if (Number(raw.headers["content-length"]) > limit) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      raw.off("data", counted);
      raw.off("end", done);
      raw.off("close", done);
      raw.off("error", done);
      resolve();
    };
    const counted = (chunk: Buffer) => {
      read += chunk.length;
      if (read > limit) done();
    };
    raw.on("data", counted);
    raw.once("end", done);
    // A client gone, or one too slow for REQUEST_TIMEOUT_MS (Node closes its request).
    raw.once("close", done);
    raw.once("error", done);
    raw.resume();
  });
}
