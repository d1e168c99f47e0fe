// The Fastify app: the REST route table, GraphQL (yoga) with GraphiQL, health, OpenAPI and docs.
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { useGraphQlJit } from "@envelop/graphql-jit";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { GraphQLError } from "graphql";
import { processRequest } from "graphql-upload-minimal";
import { createYoga, maskError } from "graphql-yoga";
import type { Services } from "./domain/context.ts";
import { MAX_FILE_SIZE } from "./domain/drive/service.ts";
import { authenticate } from "./domain/sessions/caller.ts";
import { schema } from "./graphql/index.ts";
import { type ReceivedOperation, receiveUploads } from "./graphql/received-uploads.ts";
import { beginIdempotent, type Idempotency, replay } from "./http/idempotency.ts";
import { answerFor, sendError } from "./rest/errors.ts";
import { MethodIndex, mountRoutes } from "./rest/mount.ts";
import { openApiDocument } from "./rest/openapi.ts";
import { registerRateLimits } from "./rest/rate-limits.ts";
import { routes } from "./rest/routes.ts";

const JSON_BODY_LIMIT = 1024 * 1024;

export async function buildServer(services: Services): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
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
    frameworkErrors: (_err, _request, reply) => {
      (reply as FastifyReply).code(400).send({ error: "INVALID_REQUEST" });
    },
    clientErrorHandler: answerClientError,
  });

  // An empty JSON body reads as no body: "Body: empty object" endpoints take nothing, too.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    parseJson(request, text, done);
  });

  app.setErrorHandler((err, request, reply) => sendError(request, reply, err));

  // Overload (CONTRACT 10): past a bound on requests in flight, answer at once with 503 and
  // Retry-After rather than queue work the server cannot finish in time.
  let inFlight = 0;
  app.addHook("onRequest", async (request, reply) => {
    inFlight += 1;
    (request as { counted?: boolean }).counted = true;
    if (inFlight > services.config.maxInFlight) {
      return reply.code(503).header("retry-after", "1").send({ error: "SERVICE_UNAVAILABLE" });
    }
  });
  const release = async (request: FastifyRequest) => {
    const counted = request as { counted?: boolean };
    if (counted.counted) {
      counted.counted = false;
      inFlight -= 1;
    }
  };
  app.addHook("onResponse", release);
  app.addHook("onRequestAbort", release);

  // Shutting down: requests in flight finish, and each answer then closes its connection, so no
  // keep-alive socket holds the process open after its last answer.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", async (_request, reply) => {
    if (closing) reply.header("connection", "close");
  });

  const methods = new MethodIndex();
  app.setNotFoundHandler((request, reply) => {
    const allowed = methods.allowed(request.url);
    if (allowed.length) {
      return reply.code(405).header("allow", allowed.join(", ")).send({ error: "METHOD_NOT_ALLOWED" });
    }
    return reply.code(404).send({ error: "NOT_FOUND" });
  });

  const limits = await registerRateLimits(app, services);
  await mountRoutes(app, services, routes, limits);
  for (const r of routes) methods.add(r.method, r.path);

  const unlimited = { config: limits.routeConfig("none") };
  const document = openApiDocument(routes);
  app.get("/openapi.json", unlimited, async () => document);
  methods.add("GET", "/openapi.json");
  await app.register(swagger, { mode: "static", specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: "/docs" });

  const yoga = createYoga<{ req: FastifyRequest; reply: FastifyReply }>({
    schema,
    // Each query document is compiled to JavaScript once and kept while yoga's parse cache keeps
    // the document: a home page of 20 notes cost ~0.6 ms more server CPU through the generic
    // executor than its REST view; compiled, about the same.
    plugins: [useGraphQlJit()],
    graphqlEndpoint: "/graphql",
    graphiql: { title: "Murmur GraphiQL" },
    // GraphiQL's scripts come from the package, not a CDN, so it works offline too; loaded on
    // first use, as they weigh some 80 MB in memory.
    renderGraphiQL: async (options) => (await import("@graphql-yoga/render-graphiql")).renderGraphiQL(options),
    landingPage: false,
    // Unexpected errors stay masked; a database out of reach is said as REST says it: 503
    // SERVICE_UNAVAILABLE with Retry-After, so clients retry rather than report a bug.
    maskedErrors: {
      maskError: (error, message, isDev) => {
        const cause = error instanceof GraphQLError ? error.originalError : error;
        const answer = answerFor(cause);
        if (answer.status !== 503) return maskError(error, message, isDev);
        return new GraphQLError(answer.code, {
          extensions: { code: answer.code, http: { status: 503, headers: answer.headers } },
        });
      },
    },
    // Bodies are bounded before yoga sees them: JSON by Fastify's 1 MiB limit, uploads by the
    // streaming limits above. Yoga's own Content-Length check would refuse a legal 100 MB upload.
    maxRequestBodySize: false,
    logging: {
      debug: (...args) => services.log.debug(args),
      info: (...args) => services.log.info(args),
      warn: (...args) => services.log.warn(args),
      error: (...args) => services.log.error(args),
    },
    context: async ({ req }) => ({
      ...services,
      caller: await authenticate(services, req.headers.authorization, req.ip),
    }),
  });
  // In its own context: multipart bodies here are GraphQL uploads, read as streams by
  // graphql-upload-minimal rather than by a content-type parser.
  await app.register(async (scope) => {
    scope.addContentTypeParser("multipart/form-data", (_request, _payload, done) => done(null));
    scope.route({
      url: "/graphql",
      method: ["GET", "POST", "OPTIONS"],
      handler: async (request, reply) => {
        const multipart = request.headers["content-type"]?.startsWith("multipart/form-data") ?? false;
        if (multipart) {
          try {
            request.body = await processRequest(request.raw, reply.raw, {
              maxFileSize: MAX_FILE_SIZE + 1,
              maxFiles: 1,
              maxFieldSize: JSON_BODY_LIMIT,
            });
          } catch {
            return reply.code(400).send({ error: "INVALID_REQUEST" });
          }
        }
        // Idempotency-Key on a GraphQL request: its JSON body is the fingerprint; an upload's
        // files are received first, so their SHA-256 stands in it (an account's uploads only:
        // nobody else may make the server read 100 MB).
        let idempotent: Idempotency | undefined;
        let uploads: ReceivedOperation | undefined;
        if (request.method === "POST" && request.headers["idempotency-key"] !== undefined) {
          try {
            const caller = await authenticate(services, request.headers.authorization, request.ip);
            if (!multipart || caller.account) {
              uploads = multipart ? await receiveUploads(services, request.body) : undefined;
              if (uploads) request.body = uploads.body;
              idempotent = await beginIdempotent(services, caller, request, uploads?.fingerprint ?? request.body);
            }
          } catch (err) {
            await uploads?.discard();
            return sendError(request, reply, err);
          }
          if (idempotent && "replay" in idempotent) {
            await uploads?.discard();
            return replay(reply, idempotent.replay);
          }
        }
        let response: Response;
        let body: Buffer;
        try {
          response = await yoga.handleNodeRequestAndResponse(request, reply, { req: request, reply });
          // Whole, not streamed: one write with a Content-Length rather than a chunked stream
          // (no @defer or subscriptions are served).
          body = Buffer.from(await response.arrayBuffer());
        } catch (err) {
          if (idempotent && "record" in idempotent) await idempotent.abandon();
          throw err;
        } finally {
          await uploads?.discard();
        }
        const headers: Record<string, string> = {};
        response.headers.forEach((value, key) => {
          if (key !== "content-length") headers[key] = value;
        });
        if (idempotent && "record" in idempotent) {
          await idempotent.record({ status: response.status, headers, body: body.toString() });
        }
        return reply.status(response.status).headers(headers).send(body);
      },
    });
  });
  methods.add("*", "/graphql");

  return app;
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
