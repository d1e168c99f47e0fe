// Serves GraphQL at /graphql (graphql-yoga, with GraphiQL in a browser), as rest/mount.ts serves
// the route table: bounded before it runs, credentials failing as HTTP 401, CSRF prevention,
// uploads streamed, Idempotency-Key on mutations; subscriptions over SSE (yoga's, an EventSource's
// GET included) and over WebSocket (graphql-ws) on the same path.
// Each job is a file of its own: the executor (yoga.ts), the WebSocket endpoint (websocket.ts),
// how bodies are read (body.ts), uploads (multipart-intake.ts), Idempotency-Key
// (idempotent-intake.ts), the compiled-page shortcut (compiled-shortcut.ts) and the answer as it
// goes out (answer.ts); the caller is resolved once for all of them (caller.ts).

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { InFlight } from "../http/in-flight.ts";
import type { RateLimits } from "../http/rate-limits.ts";
import type { AppServices } from "../services.ts";
import { isEventStream, passEvents, readWhole, rewritten, type WholeAnswer } from "./answer.ts";
import { emptyBodyAsStream, NOT_UTF8, NOT_UTF8_REFUSAL, registerBodyParsers } from "./body.ts";
import { MAX_TOKENS } from "./bounds.ts";
import { CompiledShortcut } from "./compiled-shortcut.ts";
import { beginGraphqlIdempotency } from "./idempotent-intake.ts";
import { schema } from "./index.ts";
import { isMultipart, readMultipart } from "./multipart-intake.ts";
import type { CountedBody } from "./multipart-parts.ts";
import { registerWebSocket, webSocketHandler } from "./websocket.ts";
import { type GraphqlYoga, graphqlYoga } from "./yoga.ts";

export async function mountGraphql(
  app: FastifyInstance,
  services: AppServices,
  limits: RateLimits,
  inFlight: InFlight,
): Promise<void> {
  const yoga = graphqlYoga(services, limits);
  warmUpAtStart(app, yoga);
  await registerWebSocket(app);
  const shortcut = new CompiledShortcut(services, schema);
  // In its own context, for its body parsers.
  await app.register(async (scope) => {
    registerBodyParsers(scope);
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.body === NOT_UTF8) return reply.code(400).send(NOT_UTF8_REFUSAL);
      const multipart = isMultipart(request);
      let counted: CountedBody | undefined;
      if (multipart) {
        counted = await readMultipart(request, reply);
        if (!counted) return reply;
      }
      const intake = await beginGraphqlIdempotency(services, request, reply, multipart);
      if (!intake) return reply;
      if (!multipart) emptyBodyAsStream(request);
      const plain = !multipart && request.method === "POST" && request.headers["idempotency-key"] === undefined;
      if (plain && (await shortcut.answered(request, reply))) return reply;
      let answer: WholeAnswer;
      try {
        const response = await yoga.handleNodeRequestAndResponse(request, reply, { req: request, reply });
        if (isEventStream(response)) return passEvents(reply, response);
        answer = await readWhole(response);
      } catch (err) {
        await intake.abandon();
        throw err;
      } finally {
        await intake.discard();
      }
      answer = rewritten(answer, counted);
      await intake.record({ ...answer, body: answer.body.toString() });
      if (plain) shortcut.learn(request.body, answer.status, answer.body);
      return reply.status(answer.status).headers(answer.headers).send(answer.body);
    };
    scope.post("/graphql", handler);
    // A WebSocket upgrade on the same path speaks graphql-transport-ws.
    scope.route({ method: "GET", url: "/graphql", handler, wsHandler: webSocketHandler(yoga, limits, inFlight) });
  });
}

/**
 * A process's first GraphQL request runs yoga's code paths cold (some 100 ms on a shared core);
 * run once at start, an anonymous query and a refused one, so no client waits for it.
 */
function warmUpAtStart(app: FastifyInstance, yoga: GraphqlYoga): void {
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
}
