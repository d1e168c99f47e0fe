// The shape of one entry of the REST route table.
import type { ServerResponse } from "node:http";
import type { z } from "zod";
import type { Context } from "../domain/context.ts";
import type { ReceivedUpload } from "../domain/drive/service.ts";
import type { ErrorCode } from "../domain/errors.ts";
import type { StatusOverrides } from "../http/errors.ts";
import type { RateLimitGroup } from "../http/rate-limits.ts";
import type { AppServices } from "../services.ts";

/** A request's context at REST's edge: the domain's, over the process's services (health and metrics read them whole). */
export type RouteContext = Context & AppServices;

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  headers: Record<string, string | undefined>;
}

/** The body of a multipart route: its text fields and its one file, received into scratch. */
export interface MultipartBody {
  fields: Record<string, string>;
  upload?: ReceivedUpload;
  /** The file part's own file name. */
  filename?: string;
}

export interface RestReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Instead of a body: writes the answer's body itself, for as long as it lasts (a live
   * stream), on the raw response whose head is sent. Without a length, so the connection's end
   * ends it.
   */
  write?: (response: ServerResponse) => void;
}

/** A documented answer other than an error. */
export interface Answer {
  status: number;
  description: string;
  /** The JSON body; none for an empty answer. */
  schema?: z.ZodType;
  /** A body that is not JSON: file bytes of the stored type. */
  bytes?: boolean;
  /** A stream of Server-Sent Events (docs/live.md#streams), described in `description`. */
  events?: boolean;
  /** A text body of this content type (e.g. Prometheus' format), not JSON. */
  text?: string;
  /** Response headers it carries: name, whether always, and what it means. */
  headers?: ResponseHeader[];
}

export interface ResponseHeader {
  name: string;
  required: boolean;
  description: string;
}

/**
 * Who may call a route (docs/http.md#public-operations), enforced by rest/mount.ts before the
 * operation runs:
 * - `none`: credentials are not read (a stale token cannot block a login or a refresh);
 * - `public`: optional; sent credentials must be valid (401 otherwise) and widen what it shows;
 * - `required`: 401 without valid credentials, 403 YOU_ARE_FROZEN for a frozen account;
 * - `moderator`: `required`, and 403 NO_PERMISSION below moderator.
 */
export type Auth = "none" | "public" | "required" | "moderator";

export interface Route<P = unknown, Q = unknown, B = unknown, R = unknown> {
  method: Method;
  /** Fastify path, e.g. `/accounts/:account_name`; also served under /v0 and with a trailing slash. */
  path: string;
  /**
   * The operation's name in openapi.json, as a generated client calls it (`createNote`,
   * `getHomeTimeline`): written here rather than derived from the path, so renaming a path
   * segment does not rename every client's method. Unique (test/openapi.test.ts).
   */
  operationId: string;
  summary: string;
  tag: string;
  auth: Auth;
  /**
   * A GET whose reads may go to a read replica (docs/fleet.md#read-replicas): one that has replayed
   * the caller's own writes. Others read the primary.
   */
  readsFrom?: "replica";
  /** Credentials may also come as the `access_token` query parameter (a browser's EventSource sends no headers). */
  tokenInQuery?: boolean;
  /**
   * A rate limit of its own (docs/protection.md#rate-limits) instead of the general one, or "none".
   * The group's GraphQL fields count against the same counter (`limited` in graphql/builder.ts).
   */
  rateLimit?: RateLimitGroup | "none";
  /** The body is multipart/form-data, read as a MultipartBody; `body` then only documents it. */
  multipart?: boolean;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /**
   * A body must be sent although no one member is required: an empty one is refused (POST
   * /notes needs content or attachments). Documented as `requestBody.required`.
   */
  bodyRequired?: boolean;
  /** Request headers the operation reads, for the documentation. */
  headers?: string[];
  /** The success answer: documented, and serialised by its schema. */
  success: Answer;
  /** Other answers that are not errors (202, 206, 304, 416). */
  also?: Answer[];
  /**
   * The domain's codes this route answers (docs/http.md#error-codes), with their statuses from
   * STATUS or `overrides`. Those of every route (credentials, INVALID_REQUEST, rate limits,
   * outages) are added by rest/openapi.ts from `auth`, `method` and `rateLimit`.
   */
  errors: ErrorCode[];
  overrides?: StatusOverrides;
  /**
   * Where a route declaring NOTHING_LEFT, a list paged by `before_id`, has its page's items in
   * its result, when the result is not the list itself (src/rest/paging.ts).
   */
  pageItems?: (result: R) => readonly unknown[];
  run(ctx: RouteContext, input: RouteInput<P, Q, B>): Promise<R>;
  reply(result: R, ctx: Context): RestReply;
}

/** Declares a route with its types inferred, erased for the table. */
export function route<P, Q, B, R>(definition: Route<P, Q, B, R>): Route {
  return definition as unknown as Route;
}
