// Headers of a connection rather than of an answer. An answer made elsewhere (yoga's Fetch
// Response, an Idempotency-Key's stored answer) is sent by Node on a connection of its own, and
// Node frames the body it is handed: with a Content-Length for a whole body, chunked for a
// stream, closing when it must. Passed on, yoga's multipart/mixed `Transfer-Encoding: chunked`
// went out beside the Content-Length of the whole body, which HTTP/1.1 forbids: undici refuses
// the answer, and a proxy that trusts the length reads the chunks' end as the next answer
// (test/framing.test.ts).

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  // Of the body as it was: Node counts the one it sends.
  "content-length",
]);

/**
 * The headers of `from` that belong to the answer itself, by lower-case name: a Fetch API
 * Headers (yoga's or Node's), or a stored answer's.
 */
export function answerHeaders(from: Pick<Headers, "forEach"> | Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  const keep = (value: string, name: string) => {
    const key = name.toLowerCase();
    if (!HOP_BY_HOP.has(key)) headers[key] = value;
  };
  if (typeof from.forEach === "function") (from as Pick<Headers, "forEach">).forEach(keep);
  else for (const [name, value] of Object.entries(from)) keep(value, name);
  return headers;
}
