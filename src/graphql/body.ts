// How /graphql reads a body: request errors are GraphQL's here, `errors[]` rather than REST's
// `{"error"}`, so what Fastify would refuse is handed on to yoga, which answers it in its words.
import { isUtf8 } from "node:buffer";
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";

/**
 * A JSON body that is not UTF-8: read as text, its strings would carry U+FFFD where its bytes
 * were, and be stored so. Refused as a body that is no JSON, in yoga's words and code.
 */
export const NOT_UTF8 = Symbol("a JSON body that is not UTF-8");
export const NOT_UTF8_REFUSAL = {
  errors: [{ message: "POST body sent invalid JSON: it is not UTF-8.", extensions: { code: "BAD_REQUEST" } }],
};

/**
 * The content type parsers of `scope` (/graphql's own context). Multipart bodies are GraphQL
 * uploads, read as streams by the multipart intake rather than by a parser. JSON that does not
 * parse is handed to yoga as text (it answers 400 "invalid JSON"), and any other type is read
 * whole (within the JSON body limit) and left to yoga, which answers the ones it does not take
 * with 415 (answer.ts).
 */
export function registerBodyParsers(scope: FastifyInstance): void {
  scope.addContentTypeParser("multipart/form-data", (_request, _payload, done) => done(null));
  const parseJson = scope.getDefaultJsonParser("error", "error");
  scope.removeContentTypeParser("application/json");
  scope.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    if (Buffer.isBuffer(body) && !isUtf8(body)) return done(null, NOT_UTF8);
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    parseJson(request, text, (err, parsed) => done(null, err ? text : parsed));
  });
  scope.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => done(null, body));
}

/**
 * whatwg-node (under yoga) takes a parsed body only when it has keys, and otherwise reads the
 * request's stream, which Fastify has already read: `{}`, `[]`, `null` or no body at all would
 * wait forever. As a stream of their text, yoga answers them as any other body it cannot run
 * (400, or 415 for a type it does not take).
 */
export function emptyBodyAsStream(request: FastifyRequest): void {
  if (request.method !== "POST" || !isEmpty(request.body)) return;
  const text = typeof request.body === "string" ? request.body : (JSON.stringify(request.body) ?? "");
  request.body = Readable.from([text]);
}

/** A parsed body that whatwg-node would not take as one (no own keys). */
function isEmpty(body: unknown): boolean {
  return body === undefined || body === null || Object.keys(body).length === 0;
}
