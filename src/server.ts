// The Fastify app: the REST route table (health included), GraphQL, OpenAPI and its docs page.
import { isUtf8 } from "node:buffer";
import { createServer, type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from "fastify";
import { mountFederation } from "./federation/mount.ts";
import { mountGraphql } from "./graphql/mount.ts";
import { registerCors } from "./http/cors.ts";
import { sendError } from "./http/errors.ts";
import { InFlight } from "./http/in-flight.ts";
import { JSON_BODY_LIMIT } from "./http/limits.ts";
import { registerRateLimits } from "./http/rate-limits.ts";
import { registerRequestLog, requestIdOf, requestLogger } from "./http/request-log.ts";
import { registerUnreadBodyDrain } from "./http/unread-body.ts";
import { MethodIndex, mountRoutes } from "./rest/mount.ts";
import { openApiDocument } from "./rest/openapi.ts";
import { streamingRoutes } from "./rest/routes/streaming.ts";
import { routes } from "./rest/routes.ts";
import type { AppServices } from "./services.ts";

/**
 * `streamsOnly`: the live streams' routes alone, for the streams' process (src/http/streams-process.ts),
 * which is handed no other request: no GraphQL, federation or documents held in its memory.
 */
export async function buildServer(services: AppServices, { streamsOnly = false } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
    // X-Request-Id, when sane, else a UUID (src/http/request-log.ts); genReqId reads the header
    // itself, as requestIdHeader would take any value unchecked.
    requestIdHeader: false,
    genReqId: requestIdOf,
    childLoggerFactory: requestLogger,
    // Off unless TRUST_PROXY says which proxies to believe: a client cannot name its own address.
    trustProxy: trustedProxies(services.config.trustProxy),
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 16_384 },
    // Slow clients: a request must arrive whole in time, its headers sooner; Node checks both
    // every connectionsCheckingInterval, so that is kept well under the headers timeout.
    requestTimeout: services.config.requestTimeoutMs,
    http: {
      headersTimeout: services.config.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(services.config.headersTimeoutMs / 4)),
    },
    forceCloseConnections: "idle",
    return503OnClosing: true,
    // A path that is not valid percent-encoding, or too long a parameter: the documented shape,
    // not Fastify's own body (which would echo the path back).
    frameworkErrors: (_err, request, reply) => {
      (reply as FastifyReply).code(400).header("x-request-id", request.id).send({ error: "INVALID_REQUEST" });
    },
    clientErrorHandler: answerClientError,
    // Fastify's own HTTP/1 server, but a live stream's request may go to the streams' process first.
    serverFactory: (handler, options) => {
      const server = createServer(options.http ?? {}, (request, response) => {
        const here = () => handler(request, response);
        if (!services.streams?.take(request, here)) here();
      });
      // As Fastify sets its own: its default keep-alive, and the request timeout above.
      server.keepAliveTimeout = 72_000;
      server.requestTimeout = services.config.requestTimeoutMs;
      return server;
    },
  });

  // An empty JSON body reads as no body: "Body: empty object" endpoints take nothing, too.
  // A body that is not UTF-8 is no JSON: read as text, its bytes would become U+FFFD in what is
  // stored. It is INVALID_REQUEST (a 400 of Fastify's own, src/http/errors.ts).
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    if (Buffer.isBuffer(body) && !isUtf8(body))
      return done(Object.assign(new Error("the JSON body is not UTF-8"), { statusCode: 400 }));
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    parseJson(request, text, done);
  });

  app.setErrorHandler((err, request, reply) => sendError(request, reply, err));
  registerRequestLog(app, services);
  registerUnreadBodyDrain(app);

  // Overload (docs/protection.md#overload): past a bound on requests in flight, answer at once with
  // 503 and Retry-After rather than queue work the server cannot finish in time.
  const inFlight = new InFlight(services.config.maxInFlight);
  // A request leaves the count when its answer closes, which it does once whatever happens:
  // written whole, or its client gone first. (Fastify's onResponse runs only for an answer written
  // whole, and its onRequestAbort only while the request's body is still coming: a client leaving
  // a POST whose body had been read left its count behind for good, and after MAX_IN_FLIGHT of
  // them every request was refused.) An answer found to be a stream of events leaves it earlier.
  type Counted = { counted?: boolean };
  function release(answer: Counted) {
    if (answer.counted) {
      answer.counted = false;
      inFlight.leave();
    }
  }
  function releaseOnClose(this: Counted) {
    release(this);
  }
  // The hooks every request runs are callbacks, not async functions: each async hook cost every
  // request a promise and a turn of the microtask queue (bench/README.md, get note).
  app.addHook("onRequest", (request, reply, done) => {
    // A live stream is open for as long as its client listens: bounded by streams per account.
    // So is a WebSocket (GraphQL subscriptions), and Fastify never answers it: counted, it would
    // never leave the count; its operations are counted one by one instead (graphql/websocket.ts).
    if (request.url.includes("/streaming/") || request.headers.upgrade?.toLowerCase() === "websocket") return done();
    (reply.raw as Counted).counted = true;
    reply.raw.on("close", releaseOnClose);
    if (inFlight.enter()) return done();
    reply.code(503).header("retry-after", "1").send({ error: "SERVICE_UNAVAILABLE" });
  });
  app.addHook("onResponse", (request, reply, done) => {
    services.metrics.answered(request, reply);
    done();
  });

  // Shutting down: requests in flight finish, and each answer then closes its connection, so no
  // keep-alive socket holds the process open after its last answer.
  let closing = false;
  // Connections that have not sent a request yet: Node leaves them to the headers timeout, whose
  // checks stop with the server, so one a client opened and left unused held shutdown for good.
  const unused = new Set<Socket>();
  app.server.on("connection", (socket: Socket) => {
    unused.add(socket);
    socket.once("close", () => unused.delete(socket));
  });
  app.server.on("request", (request: IncomingMessage) => unused.delete(request.socket));
  // A WebSocket's upgrade request is no "request" event; it is closed at shutdown by its own
  // protocol (graphql/websocket.ts), not cut.
  app.server.on("upgrade", (request: IncomingMessage) => unused.delete(request.socket));
  app.addHook("preClose", async () => {
    closing = true;
    // Live streams end now: their clients reconnect elsewhere with Last-Event-ID.
    services.live?.endAll("shutdown");
    for (const socket of unused) socket.destroy();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    // An answer that is a stream of events (a GraphQL subscription over SSE) is no longer work in
    // flight: it stays open while its client listens, bounded by streams per account.
    if (String(reply.getHeader("content-type") ?? "").startsWith("text/event-stream")) release(reply.raw as Counted);
    done(null, payload);
  });

  const methods = new MethodIndex();
  app.setNotFoundHandler((request, reply) => {
    const allowed = methods.allowed(request.url);
    if (allowed.length) {
      return reply.code(405).header("allow", allowed.join(", ")).send({ error: "METHOD_NOT_ALLOWED" });
    }
    return reply.code(404).send({ error: "NOT_FOUND" });
  });

  await registerCors(app, services.config);
  const limits = await registerRateLimits(app, services);
  const mounted = streamsOnly ? streamingRoutes : routes;
  // Before the REST routes: a GET asking for ActivityPub is Fedify's first (docs/federation.md#actors).
  if (services.config.federation && !streamsOnly) await mountFederation(app, services);
  await mountRoutes(app, services, mounted, limits);
  for (const r of mounted) methods.add(r.method, r.path);
  if (streamsOnly) return app;

  const unlimited = { config: limits.routeConfig("none") };
  const document = openApiDocument(routes);
  app.get("/openapi.json", unlimited, async () => document);
  methods.add("GET", "/openapi.json");
  await app.register(swagger, { mode: "static", specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: "/docs" });

  await mountGraphql(app, services, limits, inFlight);
  methods.add("GET", "/graphql");
  methods.add("POST", "/graphql");

  return app;
}

/**
 * Fastify's trustProxy. A hop count is proxy-addr's `(address, hop) => hop < count`, as Express
 * has it: Fastify 5 takes a number but then trusts nobody, as a count cannot tell a proxy from a
 * client reaching the server directly; TRUST_PROXY's documentation says so.
 */
function trustedProxies(
  trust: boolean | number | string[],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== "number") return trust;
  return trust === 0 ? false : (_address, hop) => hop < trust;
}

/**
 * Errors before a request exists (Node's parser): a header over 16 KiB is 431, a request not
 * whole in time 408, anything else unparsable 400; each in the documented shape, and the
 * connection closed.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const body = '{"error":"INVALID_REQUEST"}';
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
