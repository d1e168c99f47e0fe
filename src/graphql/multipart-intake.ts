// A GraphQL multipart request (an upload) read at /graphql: its CSRF headers checked first, so a
// form posted from another site is refused before a byte of its file is read, then its parts
// streamed by graphql-upload-minimal within the upload limits.
import type { IncomingMessage } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { processRequest } from "graphql-upload-minimal";
import { MAX_FILE_SIZE } from "../domain/drive/service.ts";
import { JSON_BODY_LIMIT } from "../http/limits.ts";
import { CSRF_HEADERS, CSRF_REFUSAL } from "./csrf.ts";
import { type CountedBody, countParts, TOO_MANY_PARTS } from "./multipart-parts.ts";

/** A multipart body that is no GraphQL multipart request, or past its limits: REST's code for a form past its. */
export function multipartRefusal(message: string) {
  return { errors: [{ message, extensions: { code: "INVALID_REQUEST" } }] };
}

export function isMultipart(request: FastifyRequest): boolean {
  return request.headers["content-type"]?.startsWith("multipart/form-data") ?? false;
}

/**
 * Reads the request's operations into `request.body`, its file a stream within them: the counted
 * body, whose `tooManyParts` answer.ts reads once the operation has run; or, refused and answered
 * here, undefined.
 */
export async function readMultipart(request: FastifyRequest, reply: FastifyReply): Promise<CountedBody | undefined> {
  if (!CSRF_HEADERS.some((name) => request.headers[name] !== undefined)) {
    reply.code(403).send(CSRF_REFUSAL);
    return undefined;
  }
  const counted = countParts(request.raw);
  try {
    // processRequest reads the request's headers and its stream: the counted body has both.
    request.body = await processRequest(counted as unknown as IncomingMessage, reply.raw, {
      maxFileSize: MAX_FILE_SIZE + 1,
      maxFiles: 1,
      maxFieldSize: JSON_BODY_LIMIT,
    });
  } catch (err) {
    // graphql-upload-minimal's words are for clients: which field is wrong, or missing.
    const message = counted.tooManyParts ? TOO_MANY_PARTS : (err as Error).message;
    reply.code(400).send(multipartRefusal(message));
    return undefined;
  }
  return counted;
}
