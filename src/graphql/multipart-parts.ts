// The parts of a GraphQL multipart request, counted before graphql-upload-minimal reads them. It
// takes any number: extra fields are dropped unread, extra files refused as a file past its size
// (FILE_SIZE_TOO_BIG for 10,000 parts), where REST's forms take a fixed few (rest/mount.ts).
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { Transform, type TransformCallback } from "node:stream";

/** `operations`, `map` and one file (uploadFile takes one; processRequest is given maxFiles: 1). */
export const MAX_PARTS = 3;

export const TOO_MANY_PARTS = `A GraphQL multipart request has at most ${MAX_PARTS} parts: operations, map and one file.`;

/** The request's body as processRequest reads it: a stream with the request's headers. */
export interface CountedBody extends Transform {
  headers: IncomingHttpHeaders;
  /** The body went on past MAX_PARTS parts: it ended there, before the last part's end. */
  tooManyParts: boolean;
}

/**
 * The body of `request`, ended at the delimiter that would open a part past `maxParts`. Ended
 * there, the part before it never ends: the file it may be is never stored, and the operation
 * fails. The rest of the body is read and dropped, so the client is answered.
 */
export function countParts(request: IncomingMessage, maxParts = MAX_PARTS): CountedBody {
  const boundary = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(request.headers["content-type"] ?? "");
  // A delimiter is CRLF, "--" and the boundary; the first may open the body without its CRLF,
  // so the scan starts after a CRLF of its own, which is not passed on.
  const delimiter = Buffer.from(`\r\n--${boundary?.[1] ?? boundary?.[2] ?? ""}`);
  let pending: Buffer = Buffer.from("\r\n");
  let own = 2;
  let seen = 0;
  let closed = false;
  /** `buffer` up to `end` to pass on (but for the CRLF of our own); the rest is kept. */
  const upTo = (buffer: Buffer, end: number): Buffer | undefined => {
    const start = Math.min(own, end);
    own -= start;
    pending = buffer.subarray(end);
    return end > start ? buffer.subarray(start, end) : undefined;
  };
  const body = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      if (body.tooManyParts) return done();
      if (!boundary || closed) return done(null, chunk);
      const buffer = Buffer.concat([pending, chunk]);
      let from = 0;
      for (let at = buffer.indexOf(delimiter); at >= 0; at = buffer.indexOf(delimiter, from)) {
        seen += 1;
        from = at + delimiter.length;
        if (seen <= maxParts) continue;
        // Past the last part allowed: the body's close ("--" after the boundary), or one part too many.
        if (buffer.length < from + 2) {
          seen -= 1;
          return done(null, upTo(buffer, at));
        }
        if (buffer[from] === 0x2d && buffer[from + 1] === 0x2d) {
          closed = true;
          return done(null, upTo(buffer, buffer.length));
        }
        body.tooManyParts = true;
        request.unpipe(body);
        request.resume();
        const rest = upTo(buffer, at);
        if (rest) body.push(rest);
        body.push(null);
        body.end();
        return done();
      }
      // A delimiter may be cut between this chunk and the next.
      done(null, upTo(buffer, Math.max(from, buffer.length - delimiter.length + 1)));
    },
    flush(done: TransformCallback) {
      done(null, body.tooManyParts ? undefined : upTo(pending, pending.length));
    },
  }) as CountedBody;
  body.headers = request.headers;
  body.tooManyParts = false;
  // processRequest hears of a client gone from this stream, as it would from the request's.
  request.once("close", () => {
    if (!request.complete) body.destroy();
  });
  request.pipe(body);
  return body;
}
