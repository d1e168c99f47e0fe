// The OpenAPI document of the REST routes, generated from the route table.
import { z } from "zod";
import type { ErrorCode } from "../domain/errors.ts";
import { STATUS } from "./errors.ts";
import type { Route } from "./route.ts";

type Json = Record<string, unknown>;

const jsonSchema = (schema: z.ZodType): Json => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;
  return rest;
};

// What a route that requires credentials also answers (CONTRACT 2).
const CREDENTIAL_ERRORS: [ErrorCode, number][] = [
  ["UNAUTHORIZED", 401],
  ["INVALID_TOKEN", 401],
  ["EXPIRED_TOKEN", 401],
  ["YOU_ARE_FROZEN", 403],
];

/** The mutations that take an Idempotency-Key: all of them, uploads included. */
function idempotent(r: Route): boolean {
  return r.method !== "GET";
}

function errorResponses(r: Route): Record<string, Json> {
  const answers: [ErrorCode, number][] = r.errors.map((code) => [code, r.overrides?.[code] ?? STATUS[code]]);
  if (r.auth !== "public") answers.push(...CREDENTIAL_ERRORS);
  if (idempotent(r)) answers.push(["IDEMPOTENCY_KEY_REUSED", STATUS.IDEMPOTENCY_KEY_REUSED]);
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const [code, status] of answers) byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  const responses: Record<string, Json> = {};
  for (const [status, codeSet] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = [...codeSet];
    responses[String(status)] = {
      description: codes.join(", "),
      content: {
        "application/json": {
          schema: { type: "object", required: ["error"], properties: { error: { type: "string", enum: codes } } },
        },
      },
    };
  }
  return responses;
}

export function openApiDocument(routes: Route[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    const pathParams = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const headerParams = [...(r.headers ?? []), ...(idempotent(r) ? ["Idempotency-Key"] : [])].map((name) => ({
      name,
      in: "header",
      required: false,
      schema: { type: "string" },
    }));
    const queryParams =
      r.query instanceof z.ZodObject
        ? Object.keys(r.query.shape).map((name) => ({ name, in: "query", required: false, schema: { type: "string" } }))
        : [];
    const success: Json = { description: r.success.description };
    if (r.success.schema) success.content = { "application/json": { schema: jsonSchema(r.success.schema) } };
    const operation: Json = {
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/(^|[/_])([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}`,
      summary: r.summary,
      tags: [r.tag],
      security: r.auth === "public" ? [{}, { bearer: [] }] : [{ bearer: [] }],
      parameters: [...pathParams, ...queryParams, ...headerParams],
      responses: { [String(r.success.status)]: success, ...errorResponses(r) },
    };
    if (r.body instanceof z.ZodObject) {
      operation.requestBody = { required: true, content: { "application/json": { schema: jsonSchema(r.body) } } };
    }
    paths[path] = { ...paths[path], [r.method.toLowerCase()]: operation };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Murmur",
      version: "0",
      description: 'Every path is also served under /v0. Errors are `{"error": CODE}`.',
    },
    servers: [{ url: "/" }, { url: "/v0" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    paths,
  };
}
