// Request ids and what a request's log lines say of it: the id a caller sent in X-Request-Id
// (when sane) or a fresh UUID, echoed in the answer; the caller's account once known; the error
// code of a failed answer on Fastify's "request completed" line; a failed answer's cause, said
// once per outage rather than once per request.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from "fastify";
import type { Bindings, ChildLoggerOptions, Logger } from "pino";
import { type Db, onConnection } from "../db/client.ts";
import { RepeatedFailure, type RequestLogFields, requestLogFields } from "../log.ts";

const SANE_REQUEST_ID = /^[\x20-\x7e]{1,128}$/;

type Level = "trace" | "debug" | "info" | "warn" | "error" | "fatal";
type Write = (...args: unknown[]) => void;

/**
 * A request's logger: pino's child of the process logger with the request id bound, made when it
 * first writes a line. Fastify makes one for every request, and pino serialises a child's
 * bindings as it makes it, and again as the caller's account is added: ~1% of get note's server
 * CPU, at a level (warn) where a request that succeeds writes nothing.
 */
class RequestLogger {
  #made?: Logger;

  constructor(
    private readonly parent: Logger,
    private bindings: Bindings,
  ) {}

  private made(): Logger {
    this.#made ??= this.parent.child(this.bindings);
    return this.#made;
  }

  private write(level: Level, args: unknown[]): void {
    if (this.parent.isLevelEnabled(level)) (this.made()[level] as Write)(...args);
  }

  get level(): string {
    return this.parent.level;
  }
  trace(...args: unknown[]) {
    this.write("trace", args);
  }
  debug(...args: unknown[]) {
    this.write("debug", args);
  }
  info(...args: unknown[]) {
    this.write("info", args);
  }
  warn(...args: unknown[]) {
    this.write("warn", args);
  }
  error(...args: unknown[]) {
    this.write("error", args);
  }
  fatal(...args: unknown[]) {
    this.write("fatal", args);
  }
  silent() {}
  /** What later lines say besides (the caller's account, a refused answer's code). */
  setBindings(bindings: Bindings): void {
    if (this.#made) this.#made.setBindings(bindings);
    else this.bindings = { ...this.bindings, ...bindings };
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.made().child(bindings, options);
  }
}

/** Fastify's childLoggerFactory: a RequestLogger, or pino's child at once for a route's own level. */
export function requestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
  return new RequestLogger(logger as unknown as Logger, bindings) as unknown as FastifyBaseLogger;
}

/**
 * Fastify's genReqId. Its requestIdHeader would take any header value as it is (1,000 bytes,
 * control characters, into every log line); here only a sane one is, else a UUID, unique across
 * processes and restarts where Fastify's own counter starts again at req-1.
 */
export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers["x-request-id"];
  return typeof sent === "string" && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
}

const FIELDS = Symbol("request log fields");
const OUTAGE = Symbol("database outage");
type WithFields = FastifyRequest & { [FIELDS]?: RequestLogFields; [OUTAGE]?: RepeatedFailure };

const outages = new WeakMap<Db, RepeatedFailure>();

/**
 * The database out of reach, as answers say it (REST's and GraphQL's 503): its first refusal is
 * logged, with its cause, and then nothing until the pool connects again, which is said too. A
 * stopped database refused some 90 requests a second, each once logged with its stack.
 */
export function databaseOutage(services: { db: Db; log: Logger }): RepeatedFailure {
  let outage = outages.get(services.db);
  if (!outage) {
    const created = new RepeatedFailure(services.log, "the database is out of reach: requests are answered 503");
    onConnection(services.db, () => created.succeeded());
    outages.set(services.db, created);
    outage = created;
  }
  return outage;
}

/** What a failed answer says of why: `outage` when the database could not be reached. */
export interface Failure {
  status: number;
  outage?: "database";
}

/**
 * Logs a failed answer's cause: an unexpected failure (500) each time, with its stack; the
 * database out of reach once per outage; a 503 the domain chose (not ready, a provider down) at
 * debug, as its own code says why where it knows.
 */
export function logFailure(request: FastifyRequest, err: unknown, failure: Failure): void {
  if (failure.status < 500) return;
  const outage = (request as WithFields)[OUTAGE];
  if (failure.outage === "database" && outage) outage.failed(err, "error");
  else if (failure.status === 503) request.log.debug({ err }, "request refused: unavailable");
  else request.log.error({ err }, "request failed");
}

/** An error answer's code: REST's `{"error": CODE}`, GraphQL's `errors[0].extensions.code`. */
const ERROR_CODE = /"(?:error|code)":"([A-Z][A-Z_]*)"/;

export function registerRequestLog(app: FastifyInstance, services: { db: Db; log: Logger }): void {
  const outage = databaseOutage(services);
  // First of all hooks, so that every answer (a 503 when overloaded, a 429) carries the id, and
  // everything after runs with the request's log fields (Fastify carries the async context
  // through body parsing).
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    const fields: RequestLogFields = { reqId: request.id };
    (request as WithFields)[FIELDS] = fields;
    (request as WithFields)[OUTAGE] = outage;
    requestLogFields.run(fields, done);
  });
  app.addHook("onSend", (request, reply, payload, done) => {
    if (reply.statusCode >= 400) bindErrorCode(request, payload);
    done(null, payload);
  });
}

/** Names a failed answer's error code on its request's log lines. */
function bindErrorCode(request: FastifyRequest, payload: unknown): void {
  // REST's answers are serialised by now; GraphQL's come from yoga as bytes.
  const start =
    typeof payload === "string"
      ? payload.slice(0, 2048)
      : Buffer.isBuffer(payload)
        ? payload.subarray(0, 2048).toString()
        : "";
  const code = ERROR_CODE.exec(start)?.[1];
  if (code) bind(request, { errorCode: code });
}

/** From now on, the request's log lines name its caller's account. */
export function logAccount(request: FastifyRequest, accountId: bigint | string | undefined): void {
  if (accountId === undefined) return;
  const fields = (request as WithFields)[FIELDS];
  // Requests made up for yoga (a WebSocket's operations, the warm-up at start) have no log fields.
  if (!fields || fields.accountId !== undefined) return;
  fields.accountId = accountId.toString();
  bind(request, { accountId: fields.accountId });
}

/** Adds to what the request's logger (pino's child, as services.log is pino) says on each line. */
function bind(request: FastifyRequest, fields: Record<string, string>): void {
  (request.log as unknown as Logger).setBindings(fields);
}
