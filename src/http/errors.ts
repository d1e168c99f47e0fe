// The one map from error code to HTTP status (docs/http.md#error-codes), and how any thrown
// error becomes the documented `{"error": CODE}` answer.
import type { FastifyReply, FastifyRequest } from "fastify";
import { asDomainError } from "../db/client.ts";
import { clientDetail, DomainError, type ErrorCode } from "../domain/errors.ts";
import { logFailure } from "./request-log.ts";

export const STATUS: Record<ErrorCode, number> = {
  INVALID_ACCOUNT_NAME: 400,
  TOO_LONG_ACCOUNT_NAME: 400,
  EMAIL_IN_USE: 409,
  ACCOUNT_NAME_IN_USE: 409,
  YOU_ARE_BOT: 400,
  INVALID_SEQUENCE: 400,
  VULNERABLE_PASSPHRASE: 400,
  ACCOUNT_NOT_FOUND: 404,
  INVALID_ETAG: 412,
  ALREADY_FROZEN: 400,
  NO_PERMISSION: 403,
  ACCOUNT_ALREADY_VERIFIED: 400,
  INVALID_TOKEN: 400,
  EXPIRED_TOKEN: 400,
  FAILED_TO_LOGIN: 400,
  YOU_ARE_FROZEN: 403,
  ALREADY_FOLLOWING: 400,
  YOU_ARE_NOT_FOLLOW_ACCOUNT: 400,
  // 400 on follow; the routes where it is 403 (reply, account timeline, reactions) say so.
  YOU_ARE_BLOCKED: 400,
  TOO_MANY_ATTACHMENTS: 400,
  TOO_MANY_CONTENT: 400,
  TOO_MANY_CHAR_LENGTH: 400,
  NO_DESTINATION: 400,
  INVALID_VISIBILITY: 400,
  YOU_ARE_SILENCED: 403,
  ATTACHMENT_NOT_FOUND: 404,
  NOTE_NOT_FOUND: 404,
  ALREADY_REACTED: 400,
  NOT_REACTED: 400,
  EMOJI_NOT_FOUND: 400,
  TITLE_TOO_LONG: 400,
  LIST_NOTFOUND: 404,
  TOO_MANY_TARGETS: 400,
  FILE_NOT_FOUND: 404,
  FILE_SIZE_TOO_BIG: 400,
  FILE_NAME_TOO_LONG: 400,
  INVALID_TIMELINE_TYPE: 400,
  NOTHING_LEFT: 404,
  INVALID_QUERY: 400,
  INVALID_REQUEST: 400,
  INVALID_EMAIL: 400,
  EMAIL_NOT_VERIFIED: 403,
  UNSUPPORTED_FILE_TYPE: 400,
  NOT_FOUND: 404,
  FOLLOW_REQUEST_NOT_FOUND: 404,
  NOTIFICATION_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  UNAUTHORIZED: 401,
  IDEMPOTENCY_KEY_REUSED: 409,
  REPORT_NOT_FOUND: 404,
};

/** Per-route exceptions to STATUS, where the spec gives one code two statuses. */
export type StatusOverrides = Partial<Record<ErrorCode, number>>;

export interface ErrorAnswer {
  status: number;
  code: ErrorCode;
  headers: Record<string, string>;
  /** What was wrong, for the client (X-Error-Detail, extension; DETAILED_CODES only). */
  detail?: string;
  /** What is out of reach, when that is why (src/http/request-log.ts says it once per outage). */
  outage?: "database";
}

const RETRY_AFTER_SECONDS = "1";

// What says the database cannot be reached right now: socket errors (a Unix socket's file gone
// with its server: "connect ENOENT …/.s.PGSQL.5432"); PostgreSQL's connection
// exceptions (class 08), shutdown and start-up (57P01-57P03) and too many connections (53300);
// Prisma's and its pg adapter's own names for the same, and a transaction that could not get a
// connection, or finish, in time (P2028): the database is too busy to answer now.
const UNREACHABLE_CODE =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|08\w{3}|57P0[123]|53300|P1001|P1002|P1017|P2024|P2028)$/;
const UNREACHABLE_KIND = /^(DatabaseNotReachable|ConnectionClosed|SocketTimeout|TooManyConnections)$/;
const UNREACHABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|connection error and is not queryable|connect ENOENT \S*\.s\.PGSQL\.\d+/;

/** Whether `err`, or any error it wraps (cause, Prisma's driverAdapterError), is the database out of reach. */
function databaseUnreachable(err: unknown): boolean {
  type Wrapped = { code?: unknown; kind?: unknown; message?: unknown; cause?: unknown; meta?: unknown };
  const seen = new Set<unknown>();
  const pending: unknown[] = [err];
  while (pending.length) {
    const e = pending.pop() as Wrapped | undefined;
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    if (typeof e.code === "string" && UNREACHABLE_CODE.test(e.code)) return true;
    if (typeof e.kind === "string" && UNREACHABLE_KIND.test(e.kind)) return true;
    if (typeof e.message === "string" && UNREACHABLE_MESSAGE.test(e.message)) return true;
    pending.push(e.cause, (e.meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError);
  }
  return false;
}

/** Fastify's refusals of a body, in our words (its own messages may quote what it was given). */
const FASTIFY_DETAIL: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "the body is not valid JSON",
  FST_ERR_CTP_EMPTY_JSON_BODY: "the content type is application/json but the body is empty",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "the body's content type is not taken here: send application/json",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "the body's length is not its Content-Length",
};

/** The answer's body: exactly `{"error": CODE}` (docs/http.md#errors). */
export const errorBody = (answer: ErrorAnswer) => ({ error: answer.code });

/**
 * The answer's headers, with its `detail` as X-Error-Detail (extension): the body stays exactly
 * the code. A header holds printable ASCII only; anything else is percent-encoded.
 */
export function errorHeaders(answer: ErrorAnswer): Record<string, string> {
  if (!answer.detail) return answer.headers;
  return {
    ...answer.headers,
    [ERROR_DETAIL_HEADER]: answer.detail.replace(/[^\x20-\x7e]+/g, (c) => encodeURIComponent(c)),
  };
}

export const ERROR_DETAIL_HEADER = "x-error-detail";

export function answerFor(thrown: unknown, overrides: StatusOverrides = {}): ErrorAnswer {
  const err = asDomainError(thrown);
  if (err instanceof DomainError) {
    if (err.credentials) return { status: 401, code: err.code, headers: { "www-authenticate": "Bearer" } };
    const status = overrides[err.code] ?? STATUS[err.code];
    const headers: Record<string, string> = status === 503 ? { "retry-after": RETRY_AFTER_SECONDS } : {};
    const detail = clientDetail(err);
    return { status, code: err.code, headers, ...(detail ? { detail } : {}) };
  }
  if (databaseUnreachable(err)) {
    return {
      status: 503,
      code: "SERVICE_UNAVAILABLE",
      headers: { "retry-after": RETRY_AFTER_SECONDS },
      outage: "database",
    };
  }
  // Fastify's own failures carry a status: malformed JSON, oversized body, bad content type.
  const status = (err as { statusCode?: unknown })?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    if (status === 413) return { status: 413, code: "PAYLOAD_TOO_LARGE", headers: {} };
    // The rate limiter's own answer; it has set Retry-After and X-RateLimit-* already.
    if (status === 429) return { status: 429, code: "RATE_LIMITED", headers: {} };
    const detail = FASTIFY_DETAIL[String((err as { code?: unknown }).code)];
    return { status: 400, code: "INVALID_REQUEST", headers: {}, ...(detail ? { detail } : {}) };
  }
  return { status: 500, code: "INTERNAL_ERROR", headers: {} };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, overrides?: StatusOverrides) {
  const answer = answerFor(err, overrides);
  logFailure(request, err, answer);
  // Always JSON, whatever a failed answer had set before (a file's type, say).
  return reply
    .code(answer.status)
    .headers(errorHeaders(answer))
    .type("application/json; charset=utf-8")
    .send(errorBody(answer));
}
