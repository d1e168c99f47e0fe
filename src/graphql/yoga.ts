// The GraphQL executor behind /graphql (graphql-yoga, with GraphiQL in a browser): bounded before
// it runs, compiled by graphql-jit, its failures said as REST says them, its log lines pino's.
import { useGraphQlJit } from "@envelop/graphql-jit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type ExecutionArgs, GraphQLError, getOperationAST } from "graphql";
import { createYoga, maskError, type YogaServerInstance } from "graphql-yoga";
import { asDomainError } from "../db/client.ts";
import type { Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import { answerFor } from "../http/errors.ts";
import type { RateLimits } from "../http/rate-limits.ts";
import { databaseOutage } from "../http/request-log.ts";
import { boundsPlugins } from "./bounds.ts";
import type { GraphqlContext } from "./builder.ts";
import { graphqlCaller } from "./caller.ts";
import { csrfPrevention } from "./csrf.ts";
import { DocumentCache, noErrorCache } from "./document-cache.ts";
import { schema } from "./index.ts";
import { useReadReplicas } from "./replicas.ts";
import { useContextPerEvent } from "./subscription.ts";

export type GraphqlYoga = YogaServerInstance<{ req: FastifyRequest; reply: FastifyReply }, object>;

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

export function graphqlYoga(services: Services, limits: RateLimits): GraphqlYoga {
  return createYoga<{ req: FastifyRequest; reply: FastifyReply }>({
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
    // streaming limits of multipart-intake.ts. Yoga's own Content-Length check would refuse a
    // legal 100 MB upload.
    maxRequestBodySize: false,
    logging: yogaLogging(services),
    context: async ({ req }): Promise<GraphqlContext> => {
      const caller = await graphqlCaller(services, req);
      // Login, registration and uploads count per field resolved, against REST's counters (the
      // request itself counts once against the general limit, in the route's hook).
      const who = { ip: req.ip, accountId: caller.account?.id };
      return { ...services, caller, rateLimit: (group) => limits.take(group, who) };
    },
  });
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
