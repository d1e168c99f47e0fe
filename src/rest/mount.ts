// Serves the route table on Fastify, at / and under /v0 (docs/http.md#paths).
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import multipart from "@fastify/multipart";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ZodType } from "zod";
import { keepWrites } from "../db/replicas.ts";
import type { Caller, Services } from "../domain/context.ts";
import { MAX_FILE_SIZE, type ReceivedUpload, receiveUpload } from "../domain/drive/service.ts";
import { DomainError } from "../domain/errors.ts";
import { optionalAccount, requireAccount, requireModerator } from "../domain/sessions/caller.ts";
import { callerOf } from "../http/caller.ts";
import { answerFor, errorBody, sendError } from "../http/errors.ts";
import { beginIdempotent, type Idempotency, idempotencyAsked, replay } from "../http/idempotency.ts";
import type { RateLimits } from "../http/rate-limits.ts";
import type { AppServices } from "../services.ts";
import { inlineJsonSchema } from "./openapi.ts";
import { refusePastTheEnd } from "./paging.ts";
import type { Method, MultipartBody, Route, RouteContext, RouteInput } from "./route.ts";

export const PREFIXES = ["", "/v0"];

/** Reads one part of the request by its schema; INVALID_REQUEST names the member and what it had to be. */
function parse<T>(schema: ZodType<T> | undefined, value: unknown, part: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (!result.success) {
    const [issue] = result.error.issues;
    const member = issue.path.length ? ` member \`${issue.path.join(".")}\`` : "";
    const missing = issue.code === "invalid_type" && issue.message.endsWith("received undefined");
    const rule = missing ? `missing (${issue.expected} required)` : issue.message;
    throw new DomainError("INVALID_REQUEST", { detail: `${part}${member}: ${rule}` });
  }
  return result.data;
}

function headersOf(request: FastifyRequest): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/**
 * What a route's `run` is given. A class, its getter on the prototype: as an object literal with a
 * getter, every request's input was a dictionary (its properties in a hash table of its own) that
 * V8 kept past the young generation, ~3.5 KB a request only a full collection took back, and
 * every read of it a dictionary lookup (test/unit/route-input.test.ts).
 */
class Input<P, Q, B> implements RouteInput<P, Q, B> {
  constructor(
    readonly params: P,
    readonly query: Q,
    readonly body: B,
    private readonly request: FastifyRequest,
  ) {}

  /** Copied for the few routes that read them (ETags, the metrics' token, a stream's resume). */
  get headers(): Record<string, string | undefined> {
    return headersOf(this.request);
  }
}

/** Reads a multipart body: text fields, and one `file` part streamed into scratch. */
async function readMultipart(request: FastifyRequest, services: Services): Promise<MultipartBody> {
  const body: MultipartBody = { fields: {} };
  try {
    for await (const part of request.parts()) {
      if (part.type === "field") {
        body.fields[part.fieldname] = String(part.value);
      } else if (part.fieldname === "file" && !body.upload) {
        body.filename = part.filename || undefined;
        body.upload = await receiveUpload(services, part.file);
      } else {
        part.file.resume(); // drained, not kept
        throw new DomainError("INVALID_REQUEST", { detail: "one file part, named `file`, and text fields only" });
      }
    }
  } catch (err) {
    await body.upload?.discard();
    if (err instanceof DomainError) throw err;
    // The file went past the size limit: the reader reports it here, not on the file stream.
    if ((err as { code?: string }).code === "FST_REQ_FILE_TOO_LARGE") throw new DomainError("FILE_SIZE_TOO_BIG");
    // Not multipart, malformed, or over the part limits.
    throw new DomainError("INVALID_REQUEST", { detail: "not multipart/form-data, or past its part limits" });
  }
  return body;
}

/** The Authorization header, or where the route takes it, `?access_token=`. */
function credentialsOf(request: FastifyRequest, r: Route): string | undefined {
  const token = (request.query as { access_token?: unknown }).access_token;
  if (request.headers.authorization !== undefined || !r.tokenInQuery || typeof token !== "string") {
    return request.headers.authorization;
  }
  return `Bearer ${token}`;
}

function handlerOf(services: AppServices, r: Route) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    let upload: ReceivedUpload | undefined;
    let idempotent: Idempotency | undefined;
    try {
      const caller: Caller =
        r.auth === "none" ? { ip: request.ip } : await callerOf(services, request, credentialsOf(request, r));
      const ctx: RouteContext = {
        ...services,
        caller,
        readYourWrites: { account: r.method === "GET" ? undefined : caller.account?.id },
      };
      // Who may call is checked before anything is read: an upload is refused before its 100 MB.
      if (r.auth === "public") optionalAccount(ctx);
      if (r.auth === "required") requireAccount(ctx);
      if (r.auth === "moderator") requireModerator(ctx);
      let body: unknown;
      if (r.multipart) {
        const multipartBody = await readMultipart(request, services);
        upload = multipartBody.upload;
        body = multipartBody;
        const { fields, filename } = multipartBody;
        idempotent = await beginIdempotent(services, caller, request, { fields, filename, file: upload?.sha256 });
      } else {
        // Most requests carry no key (and a GET never has one): no promise to wait for then.
        if (idempotencyAsked(request)) idempotent = await beginIdempotent(services, caller, request);
        // A missing body reads as {}: "members that are sent are ignored" also covers none.
        if (!idempotent || !("replay" in idempotent)) body = parse(r.body, request.body ?? {}, "body");
      }
      if (idempotent && "replay" in idempotent) {
        if (upload) await upload.discard();
        return replay(reply, idempotent.replay);
      }
      const input = new Input(
        parse(r.params, request.params, "path"),
        parse(r.query, request.query, "query"),
        body,
        request,
      );
      if (r.readsFrom === "replica" && services.replicas) {
        ctx.db = await services.replicas.readsFor(caller.account?.id);
      }
      let result: unknown;
      try {
        result = await r.run(ctx, input);
      } finally {
        const kept = keepWrites(ctx);
        if (kept) await kept;
      }
      refusePastTheEnd(r, input.query, result);
      const answer = r.reply(result, ctx);
      if (upload) await upload.discard(); // a no-op once the upload became a drive file
      if (idempotent && "record" in idempotent) {
        await idempotent.record({
          status: answer.status,
          headers: answer.headers ?? {},
          body: recorded(answer.body),
        });
      }
      reply.code(answer.status).headers(answer.headers ?? {});
      if (answer.write) return writeRaw(reply, answer.write);
      return answer.body === undefined ? reply.send() : reply.send(answer.body);
    } catch (err) {
      // Nothing of a refused upload is left once the client has its answer.
      if (upload) await upload.discard();
      if (idempotent && "record" in idempotent) {
        const failure = answerFor(err, r.overrides);
        await idempotent
          .record({ status: failure.status, headers: failure.headers, body: JSON.stringify(errorBody(failure)) })
          .catch(() => {});
      }
      return sendError(request, reply, err, r.overrides);
    }
  };
}

/**
 * An answer's body as a replay sends it again: what was sent. A string or bytes (JSON that
 * PostgreSQL wrote) go as they are; JSON.stringify of them had kept a string of that JSON.
 */
function recorded(body: unknown): string | undefined {
  if (body === undefined) return undefined;
  if (typeof body === "string") return body;
  return Buffer.isBuffer(body) ? body.toString() : JSON.stringify(body);
}

/**
 * Hands the response to `write` with its head sent (the headers set so far, CORS's too): each
 * write then goes to the socket as it is, without chunked framing or Fastify's send path.
 */
function writeRaw(reply: FastifyReply, write: (response: ServerResponse) => void): void {
  reply.hijack();
  const response = reply.raw;
  response.useChunkedEncodingByDefault = false;
  response.writeHead(reply.statusCode, reply.getHeaders() as OutgoingHttpHeaders);
  write(response);
}

/** The JSON schemas answers are serialised by (fast-json-stringify): undocumented members never leave. */
function responseSchemas(r: Route): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  for (const answer of [r.success, ...(r.also ?? [])]) {
    if (answer.schema) schemas[String(answer.status)] = inlineJsonSchema(answer.schema);
  }
  return schemas;
}

function addRoutes(app: FastifyInstance, services: AppServices, routes: Route[], limits: RateLimits): void {
  for (const r of routes) {
    const response = responseSchemas(r);
    for (const prefix of PREFIXES) {
      app.route({
        method: r.method,
        url: `${prefix}${r.path}`,
        config: limits.routeConfig(r.rateLimit),
        schema: { response },
        handler: handlerOf(services, r),
      });
    }
  }
}

export async function mountRoutes(
  app: FastifyInstance,
  services: AppServices,
  routes: Route[],
  limits: RateLimits,
): Promise<void> {
  addRoutes(
    app,
    services,
    routes.filter((r) => !r.multipart),
    limits,
  );
  // Multipart bodies are parsed only where a route takes them, streamed, never buffered whole.
  await app.register(async (scope) => {
    await scope.register(multipart, {
      limits: {
        // One byte past the limit, so receiveUpload sees that the file is too big.
        fileSize: MAX_FILE_SIZE + 1,
        files: 1,
        fields: 10,
        fieldSize: 64 * 1024,
        parts: 12,
        headerPairs: 100,
      },
    });
    addRoutes(
      scope,
      services,
      routes.filter((r) => r.multipart),
      limits,
    );
  });
}

/** The methods served at a path, to tell 405 from 404. */
export class MethodIndex {
  private readonly patterns: { regex: RegExp; method: Method | "*" }[] = [];

  add(method: Method | "*", path: string): void {
    const body = path
      .split("/")
      .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    this.patterns.push({ regex: new RegExp(`^(?:/v0)?${body}/?$`), method });
  }

  allowed(url: string): string[] {
    const path = url.split("?")[0].replace(/\/{2,}/g, "/");
    return [...new Set(this.patterns.filter((p) => p.regex.test(path)).map((p) => p.method))];
  }
}
