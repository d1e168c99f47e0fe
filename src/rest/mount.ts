// Serves the route table on Fastify, at / and under /v0 (CONTRACT 2).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ZodType } from "zod";
import type { Services } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import { authenticate } from "../domain/sessions/caller.ts";
import { sendError } from "./errors.ts";
import type { Method, Route } from "./route.ts";

export const PREFIXES = ["", "/v0"];

function parse<T>(schema: ZodType<T> | undefined, value: unknown): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (!result.success) throw new DomainError("INVALID_REQUEST");
  return result.data;
}

function headersOf(request: FastifyRequest): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

export function mountRoutes(app: FastifyInstance, services: Services, routes: Route[]): void {
  for (const prefix of PREFIXES) {
    for (const r of routes) {
      app.route({
        method: r.method,
        url: `${prefix}${r.path}`,
        handler: async (request: FastifyRequest, reply: FastifyReply) => {
          try {
            const caller = await authenticate(services, request.headers.authorization, request.ip);
            const ctx = { ...services, caller };
            const input = {
              params: parse(r.params, request.params),
              query: parse(r.query, request.query),
              // A missing body reads as {}: "members that are sent are ignored" also covers none.
              body: parse(r.body, request.body ?? {}),
              headers: headersOf(request),
            };
            const result = await r.run(ctx, input);
            const answer = r.reply(result, ctx);
            reply.code(answer.status).headers(answer.headers ?? {});
            return answer.body === undefined ? reply.send() : reply.send(answer.body);
          } catch (err) {
            return sendError(request, reply, err, r.overrides);
          }
        },
      });
    }
  }
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
