// The caller of a GraphQL request over HTTP, resolved once (src/http/caller.ts) for every part of
// the request that reads it: the Idempotency-Key's owner, the compiled page, the executor.
import type { FastifyRequest } from "fastify";
import type { Caller, Services } from "../domain/context.ts";
import { callerOf } from "../http/caller.ts";
import { fromEventSource } from "./csrf.ts";

export function graphqlCaller(services: Services, req: FastifyRequest): Promise<Caller> {
  return callerOf(services, req, credentialsOf(req));
}

/** The Authorization header, or from an EventSource (it sends none), `?access_token=`, as /streaming/... take it. */
function credentialsOf(req: FastifyRequest): string | undefined {
  const token = (req.query as { access_token?: unknown } | undefined)?.access_token;
  if (req.headers.authorization !== undefined || typeof token !== "string") return req.headers.authorization;
  return fromEventSource(req.method, req.headers.accept) ? `Bearer ${token}` : undefined;
}
