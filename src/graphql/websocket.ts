// GraphQL over WebSocket at /graphql (graphql-ws's graphql-transport-ws), beside the HTTP
// endpoint on the same path.
import websocket from "@fastify/websocket";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type execute as graphqlExecute,
  type subscribe as graphqlSubscribe,
} from "graphql";
import { makeHandler } from "graphql-ws/use/@fastify/websocket";
import { DomainError, type ErrorCode } from "../domain/errors.ts";
import type { InFlight } from "../http/in-flight.ts";
import type { RateLimits } from "../http/rate-limits.ts";
import type { GraphqlYoga } from "./yoga.ts";

/**
 * @fastify/websocket, whose upgrades the GET route of /graphql answers (mount.ts).
 * At shutdown each WebSocket is closed with 1001 "going away", as the live streams end: its
 * client reconnects to another instance, and none holds the shutdown. (graphql-ws pings each
 * one every 12 s, so proxies keep an idle one open.)
 */
export async function registerWebSocket(app: FastifyInstance): Promise<void> {
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
export function webSocketHandler(yoga: GraphqlYoga, limits: RateLimits, inFlight: InFlight) {
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

/** An operation refused before it ran, as a GraphQL error in the words of maskedErrors (yoga.ts). */
function refusal(code: ErrorCode): GraphQLError {
  return new GraphQLError(code, { extensions: { code } });
}

type Enveloped = {
  execute: (args: ExecutionArgs) => ReturnType<typeof graphqlExecute>;
  subscribe: (args: ExecutionArgs) => ReturnType<typeof graphqlSubscribe>;
  /** Ends the operation's time in flight. */
  leave: () => void;
};

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
