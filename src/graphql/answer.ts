// Yoga's answer at /graphql, as it goes to the client: an event stream passed on as it comes,
// anything else whole, in one framing, with the statuses and bodies GraphQL over HTTP and REST's
// clients expect where yoga's differ.
import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { answerHeaders } from "../http/hop-by-hop.ts";
import { CSRF_REFUSAL } from "./csrf.ts";
import { multipartRefusal } from "./multipart-intake.ts";
import type { CountedBody } from "./multipart-parts.ts";
import { TOO_MANY_PARTS } from "./multipart-parts.ts";

export interface WholeAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A subscription over SSE. */
export function isEventStream(response: Response): boolean {
  return Boolean(response.body) && (response.headers.get("content-type")?.startsWith("text/event-stream") ?? false);
}

/**
 * A subscription over SSE is passed on as it comes, its connection closed with it (an idle
 * keep-alive socket would hold a shutdown back).
 */
export function passEvents(reply: FastifyReply, response: Response): FastifyReply {
  const streamed = { ...answerHeaders(response.headers), connection: "close", "x-accel-buffering": "no" };
  return reply
    .status(response.status)
    .headers(streamed)
    .send(Readable.from(response.body as unknown as AsyncIterable<Uint8Array>));
}

/** Anything else whole: one write with a Content-Length rather than a chunked stream. */
export async function readWhole(response: Response): Promise<WholeAnswer> {
  // Whole, in one framing: yoga's multipart/mixed says it is chunked.
  return {
    status: response.status,
    headers: answerHeaders(response.headers),
    body: Buffer.from(await response.arrayBuffer()),
  };
}

/** The answer the client gets for yoga's: `counted` is a multipart request's body. */
export function rewritten(answer: WholeAnswer, counted: CountedBody | undefined): WholeAnswer {
  let { status, body } = answer;
  const headers = answer.headers;
  // A request error (it failed to parse, validate or keep within the bounds, so nothing ran
  // and there is no `data`) is 400 for every client, as GraphQL over HTTP has it for
  // application/graphql-response+json; yoga would answer application/json clients 200.
  if (status === 200 && body.subarray(0, 10).toString() === '{"errors":' && !("data" in JSON.parse(body.toString()))) {
    status = 400;
  }
  // Parts past the limit end the body before the file they follow ends: whatever the
  // operation made of that, the request is refused whole (nothing of its file was kept).
  if (counted?.tooManyParts) {
    status = 400;
    headers["content-type"] = "application/json; charset=utf-8";
    body = Buffer.from(JSON.stringify(multipartRefusal(TOO_MANY_PARTS)));
  }
  // Yoga's CSRF refusal (its only 403) carries no code: the same answer as the multipart intake's.
  if (status === 403 && !body.includes('"code"')) {
    headers["content-type"] = "application/json; charset=utf-8";
    body = Buffer.from(JSON.stringify(CSRF_REFUSAL));
  }
  // Yoga says an unsupported content type with an empty 415; clients get errors[] instead.
  if (status === 415 && body.length === 0) {
    headers["content-type"] = "application/json; charset=utf-8";
    body = Buffer.from(
      JSON.stringify({
        errors: [
          {
            message: "Unsupported Media Type: send application/json or multipart/form-data",
            extensions: { code: "UNSUPPORTED_MEDIA_TYPE" },
          },
        ],
      }),
    );
  }
  return { status, headers, body };
}
