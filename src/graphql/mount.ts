// Serves GraphQL at /graphql (graphql-yoga, with GraphiQL in a browser), as rest/mount.ts serves
// the route table: bounded before it runs, credentials failing as HTTP 401, CSRF prevention,
// uploads streamed, Idempotency-Key on mutations; subscriptions over SSE (yoga's, an EventSource's
// GET included) and over WebSocket (graphql-ws) on the same path.

import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { useGraphQlJit } from "@envelop/graphql-jit";
import websocket from "@fastify/websocket";
import { useCSRFPrevention } from "@graphql-yoga/plugin-csrf-prevention";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  getOperationAST,
  type execute as graphqlExecute,
  type subscribe as graphqlSubscribe,
} from "graphql";
import { processRequest } from "graphql-upload-minimal";
import { makeHandler } from "graphql-ws/use/@fastify/websocket";
import { createYoga, maskError, type Plugin as YogaPlugin, type YogaServerInstance } from "graphql-yoga";
import { asDomainError } from "../db/client.ts";
import type { Context, Services } from "../domain/context.ts";
import { MAX_FILE_SIZE } from "../domain/drive/service.ts";
import { DomainError, type ErrorCode } from "../domain/errors.ts";
import { authenticate } from "../domain/sessions/caller.ts";
import { answerFor, sendError } from "../http/errors.ts";
import { answerHeaders } from "../http/hop-by-hop.ts";
import { beginIdempotent, type Idempotency, replay } from "../http/idempotency.ts";
import type { InFlight } from "../http/in-flight.ts";
import { JSON_BODY_LIMIT } from "../http/limits.ts";
import type { RateLimits } from "../http/rate-limits.ts";
import { databaseOutage, logAccount } from "../http/request-log.ts";
import { boundsPlugins, MAX_TOKENS } from "./bounds.ts";
import type { GraphqlContext } from "./builder.ts";
import { answerPage, type CompiledPage, CompiledPages } from "./compiled-pages.ts";
import { DocumentCache, noErrorCache } from "./document-cache.ts";
import { schema } from "./index.ts";
import { type CountedBody, countParts, TOO_MANY_PARTS } from "./multipart-parts.ts";
import { type ReceivedOperation, receiveUploads } from "./received-uploads.ts";
import { useReadReplicas } from "./replicas.ts";
import { useContextPerEvent } from "./subscription.ts";

/**
 * Headers a browser sends only after a CORS preflight, so a request carrying one cannot come
 * from another site's form: yoga's own, Apollo's, and Authorization (a Bearer token).
 */
const CSRF_HEADERS = ["x-graphql-yoga-csrf", "apollo-require-preflight", "authorization"];

/**
 * A JSON body that is not UTF-8: read as text, its strings would carry U+FFFD where its bytes
 * were, and be stored so. Refused as a body that is no JSON, in yoga's words and code.
 */
const NOT_UTF8 = Symbol("a JSON body that is not UTF-8");
const NOT_UTF8_REFUSAL = {
  errors: [{ message: "POST body sent invalid JSON: it is not UTF-8.", extensions: { code: "BAD_REQUEST" } }],
};

/** A multipart body that is no GraphQL multipart request, or past its limits: REST's code for a form past its. */
function multipartRefusal(message: string) {
  return { errors: [{ message, extensions: { code: "INVALID_REQUEST" } }] };
}

/** A request without any of CSRF_HEADERS that a browser could have sent from another site. */
const CSRF_REFUSAL = {
  errors: [{ message: "Required CSRF header(s) not present", extensions: { code: "CSRF_HEADER_MISSING" } }],
};

/** The query GraphiQL opens on, until the browser keeps one of its own. */
const GRAPHIQL_QUERY = `# Murmur's GraphQL. The global timeline needs no credentials: run this with ▶.
#
# Credentials: the Headers pane below takes
#   {"Authorization": "Bearer <authorization_token>"}
# with a token from the \`login\` mutation (or REST's POST /login); it then goes with every
# request, subscriptions included. Failures are \`DomainError { code message }\` results.

query GlobalTimeline($first: Int) {
  globalTimeline(first: $first) {
    __typename
    ... on NoteConnection {
      edges { node { id content createdAt author { name nickname } } }
      pageInfo { hasNextPage endCursor }
    }
    ... on DomainError { code message }
  }
}
`;

export async function mountGraphql(
  app: FastifyInstance,
  services: Services,
  limits: RateLimits,
  inFlight: InFlight,
): Promise<void> {
  const yoga = createYoga<{ req: FastifyRequest; reply: FastifyReply }>({
    schema,
    plugins: [
      ...boundsPlugins(),
      csrfPrevention(),
      // Each query document is compiled to JavaScript once and kept while yoga's parse cache
      // keeps the document: a home page of 20 notes cost ~0.6 ms more server CPU through the
      // generic executor than its REST view; compiled, about the same.
      // Not subscriptions: graphql-jit hands a subscription field's `subscribe` no arguments.
      useGraphQlJit(
        {},
        {
          enableIf: (args: ExecutionArgs) =>
            getOperationAST(args.document, args.operationName)?.operation !== "subscription",
        },
      ),
      useReadReplicas(),
      useContextPerEvent(),
    ],
    graphqlEndpoint: "/graphql",
    // CORS is answered for every route alike by @fastify/cors (src/http/cors.ts).
    cors: false,
    // A JSON array of operations would multiply every bound by its length: refused.
    batching: false,
    graphiql: {
      title: "Murmur GraphiQL",
      // A newcomer's first page runs as it is (the global timeline needs no credentials) and says
      // where credentials go: GraphiQL sends the Headers pane's JSON with every request.
      defaultQuery: GRAPHIQL_QUERY,
      defaultEditorToolsVisibility: "headers",
    },
    // GraphiQL's scripts come from the package, not a CDN, so it works offline too; loaded on
    // first use, as they weigh some 80 MB in memory.
    renderGraphiQL: async (options) => (await import("@graphql-yoga/render-graphiql")).renderGraphiQL(options),
    landingPage: false,
    // Unexpected errors stay masked. Said as REST says them: credentials that are missing or
    // unusable are HTTP 401 with WWW-Authenticate, so clients refresh their token as they would
    // for REST; a database out of reach is 503 SERVICE_UNAVAILABLE with Retry-After.
    maskedErrors: {
      maskError: (error, message, isDev) => {
        const cause = asDomainError(error instanceof GraphQLError ? error.originalError : error);
        const answer = answerFor(cause);
        const path = error instanceof GraphQLError ? error.path : undefined;
        // A refused subscription (fields answer DomainErrors as results; a stream cannot).
        if (cause instanceof DomainError && answer.status !== 401) {
          return new GraphQLError(answer.code, { path, extensions: { code: answer.code } });
        }
        if (answer.status !== 503 && answer.status !== 401) return maskError(error, message, isDev);
        return new GraphQLError(answer.code, {
          path,
          extensions: { code: answer.code, http: { status: answer.status, headers: answer.headers } },
        });
      },
    },
    // Parsed documents are kept by the characters of their text, not only by their number.
    parserAndValidationCache: { documentCache: new DocumentCache(), errorCache: noErrorCache },
    // Bodies are bounded before yoga sees them: JSON by Fastify's 1 MiB limit, uploads by the
    // streaming limits below. Yoga's own Content-Length check would refuse a legal 100 MB upload.
    maxRequestBodySize: false,
    logging: yogaLogging(services),
    context: async ({ req }): Promise<GraphqlContext> => {
      const caller = await authenticate(services, credentialsOf(req), req.ip);
      logAccount(req, caller.account?.id);
      // Login, registration and uploads count per field resolved, against REST's counters (the
      // request itself counts once against the general limit, in the route's hook).
      const who = { ip: req.ip, accountId: caller.account?.id };
      return { ...services, caller, rateLimit: (group) => limits.take(group, who) };
    },
  });
  // A process's first GraphQL request runs yoga's code paths cold (some 100 ms on a shared
  // core); run once at start, an anonymous query and a refused one, so no client waits for it.
  app.addHook("onReady", async () => {
    for (const query of ["{ __typename }", `{ ${"__typename ".repeat(MAX_TOKENS + 1)}}`]) {
      const request = { headers: {}, ip: "127.0.0.1" } as FastifyRequest;
      await yoga.fetch(
        "http://localhost/graphql",
        {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ query }),
        },
        { req: request, reply: undefined as unknown as FastifyReply },
      );
    }
  });
  // At shutdown each WebSocket is closed with 1001 "going away", as the live streams end: its
  // client reconnects to another instance, and none holds the shutdown. (graphql-ws pings each
  // one every 12 s, so proxies keep an idle one open.)
  await app.register(websocket, {
    preClose(done) {
      for (const client of this.websocketServer.clients) {
        client.close(1001, "shutdown");
        // One that does not answer the close is cut, rather than hold the shutdown for ws's 30 s.
        setTimeout(() => client.terminate(), 2_000).unref();
      }
      done();
    },
  });
  const compiled = new CompiledPages();
  // In its own context: multipart bodies here are GraphQL uploads, read as streams by
  // graphql-upload-minimal rather than by a content-type parser.
  await app.register(async (scope) => {
    scope.addContentTypeParser("multipart/form-data", (_request, _payload, done) => done(null));
    // Request errors are GraphQL's here, `errors[]` rather than REST's `{"error"}`: JSON that
    // does not parse is handed to yoga as text (it answers 400 "invalid JSON"), and any other
    // type is read whole (within the JSON body limit) and left to yoga, which answers the ones it
    // does not take with 415 (below).
    const parseJson = scope.getDefaultJsonParser("error", "error");
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
      if (Buffer.isBuffer(body) && !isUtf8(body)) return done(null, NOT_UTF8);
      const text = body.toString();
      if (text.trim() === "") return done(null, undefined);
      parseJson(request, text, (err, parsed) => done(null, err ? text : parsed));
    });
    scope.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => done(null, body));
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.body === NOT_UTF8) return reply.code(400).send(NOT_UTF8_REFUSAL);
      const multipart = request.headers["content-type"]?.startsWith("multipart/form-data") ?? false;
      // A multipart body is read here, before yoga's CSRF check sees it: checked first, so a
      // form posted from another site is refused before a byte of its file is read.
      if (multipart && !CSRF_HEADERS.some((name) => request.headers[name] !== undefined)) {
        return reply.code(403).send(CSRF_REFUSAL);
      }
      let counted: CountedBody | undefined;
      if (multipart) {
        counted = countParts(request.raw);
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
          return reply.code(400).send(multipartRefusal(message));
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
      if (!multipart && request.method === "POST" && isEmpty(request.body)) {
        // whatwg-node (under yoga) takes a parsed body only when it has keys, and otherwise
        // reads the request's stream, which Fastify has already read: `{}`, `[]`, `null` or no
        // body at all would wait forever. As a stream of their text, yoga answers them as any
        // other body it cannot run (400, or 415 for a type it does not take).
        const text = typeof request.body === "string" ? request.body : (JSON.stringify(request.body) ?? "");
        request.body = Readable.from([text]);
      }
      // A timeline page of a document already answered once is answered by its compiled plan.
      const plain = !multipart && request.method === "POST" && request.headers["idempotency-key"] === undefined;
      const plan = plain ? compiled.planOf(request.body) : undefined;
      const mediaType = plan && regularMediaType(request.headers.accept);
      if (plan && mediaType) {
        const answer = await compiledAnswer(services, request, plan);
        services.metrics.compiledPage(answer === undefined ? "executor" : "plan");
        if (answer !== undefined) return reply.header("content-type", `${mediaType}; charset=utf-8`).send(answer);
      }
      let response: Response;
      let body: Buffer;
      try {
        response = await yoga.handleNodeRequestAndResponse(request, reply, { req: request, reply });
        // A subscription over SSE is passed on as it comes, its connection closed with it (an
        // idle keep-alive socket would hold a shutdown back).
        if (response.body && response.headers.get("content-type")?.startsWith("text/event-stream")) {
          const streamed = { ...answerHeaders(response.headers), connection: "close", "x-accel-buffering": "no" };
          return reply
            .status(response.status)
            .headers(streamed)
            .send(Readable.from(response.body as unknown as AsyncIterable<Uint8Array>));
        }
        // Anything else whole: one write with a Content-Length rather than a chunked stream.
        body = Buffer.from(await response.arrayBuffer());
      } catch (err) {
        if (idempotent && "record" in idempotent) await idempotent.abandon();
        throw err;
      } finally {
        await uploads?.discard();
      }
      // Whole, in one framing: yoga's multipart/mixed says it is chunked.
      const headers = answerHeaders(response.headers);
      // A request error (it failed to parse, validate or keep within the bounds, so nothing ran
      // and there is no `data`) is 400 for every client, as GraphQL over HTTP has it for
      // application/graphql-response+json; yoga would answer application/json clients 200.
      let status = response.status;
      if (
        status === 200 &&
        body.subarray(0, 10).toString() === '{"errors":' &&
        !("data" in JSON.parse(body.toString()))
      ) {
        status = 400;
      }
      // Parts past the limit end the body before the file they follow ends: whatever the
      // operation made of that, the request is refused whole (nothing of its file was kept).
      if (counted?.tooManyParts) {
        status = 400;
        headers["content-type"] = "application/json; charset=utf-8";
        body = Buffer.from(JSON.stringify(multipartRefusal(TOO_MANY_PARTS)));
      }
      // Yoga's CSRF refusal (its only 403) carries no code: the same answer as ours above.
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
      if (idempotent && "record" in idempotent) {
        await idempotent.record({ status, headers, body: body.toString() });
      }
      if (plain) compiled.learn(request.body, status, body);
      return reply.status(status).headers(headers).send(body);
    };
    scope.post("/graphql", handler);
    // A WebSocket upgrade on the same path speaks graphql-transport-ws.
    scope.route({ method: "GET", url: "/graphql", handler, wsHandler: webSocketHandler(yoga, limits, inFlight) });
  });
}

/**
 * GraphQL over WebSocket (graphql-ws's graphql-transport-ws, as graphql-ws's envelop recipe has
 * it): each operation runs through yoga's own envelop, so the same plugins bound it; the
 * credentials come in connection_init's payload, `{"authorization": "Bearer <token>"}`, as a
 * browser's WebSocket cannot send headers.
 * Each operation is a request as an HTTP one is, which the hooks that count those never see (they
 * saw the upgrade only): in flight until it has run (a subscription until its stream is open), and
 * counted against the general rate limits. Refused, it is an `error` message whose code is the
 * one an HTTP request would have been answered (SERVICE_UNAVAILABLE, RATE_LIMITED), and nothing
 * of it runs.
 */
function webSocketHandler(
  yoga: YogaServerInstance<{ req: FastifyRequest; reply: FastifyReply }, object>,
  limits: RateLimits,
  inFlight: InFlight,
) {
  return makeHandler<{ authorization?: unknown; Authorization?: unknown }>({
    execute: (args) => landed(args, (root) => root.execute(args)),
    subscribe: (args) => landed(args, (root) => root.subscribe(args)),
    onNext: (_ctx, _id, _payload, _args, result) => withoutHttp(result),
    onSubscribe: async (ctx, _id, payload) => {
      const given = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
      const authorization = typeof given === "string" ? given : undefined;
      if (!inFlight.enter()) {
        inFlight.leave();
        return [refusal("SERVICE_UNAVAILABLE")];
      }
      let left = false;
      const leave = () => {
        if (!left) inFlight.leave();
        left = true;
      };
      try {
        await limits.takeRequest(ctx.extra.request.ip, authorization);
        const req = { headers: { authorization }, ip: ctx.extra.request.ip } as FastifyRequest;
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          req,
          reply: undefined as unknown as FastifyReply,
          params: payload,
        });
        const args = {
          schema,
          operationName: payload.operationName,
          document: parse(payload.query),
          variableValues: payload.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe, leave } satisfies Enveloped,
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) leave();
        return errors.length ? errors : args;
      } catch (err) {
        leave();
        if (err instanceof DomainError) return [refusal(err.code)];
        throw err;
      }
    },
  });
}

/** What `run` gives, once it has: the operation is no longer in flight. */
async function landed<T>(args: ExecutionArgs, run: (root: Enveloped) => T): Promise<Awaited<T>> {
  const root = args.rootValue as Enveloped;
  try {
    return await run(root);
  } finally {
    root.leave();
  }
}

/** An operation refused before it ran, as a GraphQL error in the words of maskedErrors above. */
function refusal(code: ErrorCode): GraphQLError {
  return new GraphQLError(code, { extensions: { code } });
}

/**
 * A compiled plan's answer (compiled-pages.ts) in the context the executor would give it, or
 * undefined to leave the request to the executor: a refusal (missing credentials, a frozen
 * caller, a list one may not read, a `first` out of range) or a failure is answered there, as it
 * always was.
 */
async function compiledAnswer(services: Services, request: FastifyRequest, plan: CompiledPage) {
  try {
    const caller = await authenticate(services, credentialsOf(request), request.ip);
    logAccount(request, caller.account?.id);
    const ctx: Context = { ...services, caller };
    if (services.replicas) ctx.db = await services.replicas.readsFor(caller.account?.id);
    return await answerPage(ctx, plan);
  } catch (err) {
    if (answerFor(err).outage === "database") databaseOutage(services).failed(err, "error");
    else if (!(err instanceof DomainError))
      services.log.warn({ err }, "a compiled GraphQL page failed; the executor answers it");
    return undefined;
  }
}

/**
 * The type yoga answers a query's result in for this Accept header (its result processors,
 * graphql-yoga's use-result-processor.js: the last type that matches wins), or undefined when
 * it would not answer in JSON.
 */
function regularMediaType(accept: string | undefined): string | undefined {
  let chosen: string | undefined;
  const asked = (accept || "*/*").replace(/\s/g, "").toLowerCase().split(",");
  for (const entry of asked.reverse()) {
    const [mediaType, ...params] = entry.split(";");
    if ((params.find((param) => param.includes("charset=")) ?? "charset=utf-8") !== "charset=utf-8") continue;
    const [askedType, askedSubtype] = mediaType.split("/");
    for (const type of ["application/graphql-response+json", "application/json"]) {
      const [pre, suf] = type.split("/");
      if ((askedType === "*" || askedType === pre) && (askedSubtype === "*" || askedSubtype === suf)) chosen = type;
    }
  }
  return chosen;
}

type Enveloped = {
  execute: (args: ExecutionArgs) => ReturnType<typeof graphqlExecute>;
  subscribe: (args: ExecutionArgs) => ReturnType<typeof graphqlSubscribe>;
  /** Ends the operation's time in flight. */
  leave: () => void;
};

/**
 * Yoga's CSRF prevention, except for a GET asking for text/event-stream: a browser's EventSource
 * and GraphiQL's subscriptions cannot send a header. Nothing is opened by it: a GET runs no
 * mutation, and no request carries credentials its page did not put in it (Bearer tokens, never
 * cookies).
 */
function csrfPrevention(): YogaPlugin {
  const { onRequestParse } = useCSRFPrevention({ requestHeaders: CSRF_HEADERS });
  return {
    onRequestParse: (payload) =>
      fromEventSource(payload.request.method, payload.request.headers.get("accept"))
        ? undefined
        : onRequestParse?.(payload),
  };
}

/** A GET asking for text/event-stream: a browser's EventSource, or a subscription in GraphiQL. */
function fromEventSource(method: string | undefined, accept: string | null | undefined): boolean {
  return method === "GET" && (accept ?? "").includes("text/event-stream");
}

/** The Authorization header, or from an EventSource (it sends none), `?access_token=`, as /streaming/... take it. */
function credentialsOf(req: FastifyRequest): string | undefined {
  const token = (req.query as { access_token?: unknown } | undefined)?.access_token;
  if (req.headers.authorization !== undefined || typeof token !== "string") return req.headers.authorization;
  return fromEventSource(req.method, req.headers.accept) ? `Bearer ${token}` : undefined;
}

/**
 * Yoga's log lines in pino's terms: an error as `err` (pino's own serialiser writes its message
 * and stack; yoga's arguments as they came were written `{"0":{}}`), once, as yoga logs each
 * error it masks twice. A refusal (a subscription's RATE_LIMITED, missing credentials) is the
 * client's, not the server's; the database out of reach is said once per outage, as REST says it.
 */
function yogaLogging(services: Services) {
  const logged = new WeakSet<object>();
  const line =
    (level: "debug" | "info" | "warn") =>
    (...args: unknown[]) => {
      const err = args.find((arg) => arg instanceof Error);
      const words = args.filter((arg) => typeof arg === "string").join(" ");
      services.log[level](err ? { err } : {}, words || (err as Error | undefined)?.message || "graphql-yoga");
    };
  return {
    debug: line("debug"),
    info: line("info"),
    warn: line("warn"),
    error: (...args: unknown[]) => {
      for (const arg of args) {
        if (typeof arg === "object" && arg !== null) {
          if (logged.has(arg)) continue;
          logged.add(arg);
        }
        const cause = asDomainError(arg instanceof GraphQLError ? (arg.originalError ?? arg) : arg);
        const answer = answerFor(cause);
        if (answer.outage === "database") databaseOutage(services).failed(cause, "error");
        else if (answer.status < 500 || cause instanceof DomainError)
          services.log.debug({ err: cause }, "GraphQL request refused");
        else services.log.error({ err: cause }, "GraphQL operation failed");
      }
    },
  };
}

/** A result without `extensions.http` (a status and headers), which yoga's HTTP answers leave out too. */
function withoutHttp(result: ExecutionResult): FormattedExecutionResult | undefined {
  if (!result.errors?.some((error) => error.extensions?.http !== undefined)) return undefined;
  return {
    ...result,
    errors: result.errors.map((error) => {
      const { http: _, ...extensions } = error.extensions;
      return { ...error.toJSON(), extensions };
    }),
  };
}

/** A parsed body that whatwg-node would not take as one (no own keys). */
function isEmpty(body: unknown): boolean {
  return body === undefined || body === null || Object.keys(body).length === 0;
}
