// The OpenAPI document of the REST routes, generated from the route table: every answer a route
// can give, with its schema and headers, including those every route shares (credentials,
// INVALID_REQUEST, rate limits, idempotency, outages). Test runs hold every real answer to it.
import { z } from "zod";
import { DETAILED_CODES, type ErrorCode } from "../domain/errors.ts";
import { STATUS } from "../http/errors.ts";
import { queryTypes } from "./query.ts";
import type { Answer, ResponseHeader, Route } from "./route.ts";
import { ERROR_DETAIL } from "./views/error.ts";

type Json = Record<string, unknown>;

const COMPONENTS = "#/components/schemas/";

/** A schema as JSON Schema: `named` wire shapes become references into components.schemas. */
export function jsonSchema(schema: z.ZodType, io: "input" | "output" = "output"): Json {
  const converted = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      const replacement = queryTypes.get(zodSchema);
      if (!replacement) return;
      for (const key of Object.keys(jsonSchema)) delete (jsonSchema as Json)[key];
      Object.assign(jsonSchema, replacement);
    },
  }) as Json;
  const {
    $schema: _,
    $defs: __,
    ...rest
  } = JSON.parse(JSON.stringify(converted).replaceAll('"#/$defs/', `"${COMPONENTS}`)) as Json;
  return rest;
}

/** A schema with every wire shape written out in place: what fast-json-stringify serialises by. */
export function inlineJsonSchema(schema: z.ZodType): Json {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { unrepresentable: "any", metadata: z.registry() }) as Json;
  return rest;
}

const header = (name: string, required: boolean, description: string): ResponseHeader => ({
  name,
  required,
  description,
});

const RETRY_AFTER = header("Retry-After", true, "seconds to wait before trying again");
const RATE_LIMIT_HEADERS = [
  header("X-RateLimit-Limit", false, "requests allowed in the window (see docs/protection.md#rate-limits)"),
  header("X-RateLimit-Remaining", false, "requests left in the window"),
  header("X-RateLimit-Reset", false, "seconds until the window resets"),
];
const WWW_AUTHENTICATE = header("WWW-Authenticate", true, "`Bearer`");
const REPLAYED = header("Idempotent-Replayed", false, "`true` on the kept answer of an Idempotency-Key replay");

/** The mutations that take an Idempotency-Key: all of them, uploads included. */
const isMutation = (r: Route) => r.method !== "GET";
const isLimited = (r: Route) => r.rateLimit !== "none";

/** The codes every route of its kind answers beside its own `errors`, with their statuses. */
export function sharedErrors(r: Route): [ErrorCode, number][] {
  const codes: [ErrorCode, number][] = [
    ["INVALID_REQUEST", 400],
    ["INTERNAL_ERROR", 500],
    ["SERVICE_UNAVAILABLE", 503],
  ];
  // Credentials fail as 401 (docs/http.md#credentials), whatever status the code has where a body
  // carries a token.
  if (r.auth !== "none") codes.push(["INVALID_TOKEN", 401], ["EXPIRED_TOKEN", 401]);
  if (r.auth === "required" || r.auth === "moderator") codes.push(["UNAUTHORIZED", 401], ["YOU_ARE_FROZEN", 403]);
  if (r.auth === "moderator") codes.push(["NO_PERMISSION", 403]);
  if (isLimited(r)) codes.push(["RATE_LIMITED", 429]);
  if (isMutation(r)) codes.push(["IDEMPOTENCY_KEY_REUSED", 409], ["PAYLOAD_TOO_LARGE", 413]);
  return codes;
}

/** Headers every answer of the route may carry, and those of one status. */
function headersOf(r: Route, status: number, own: ResponseHeader[] = []): Json | undefined {
  const headers = [...own];
  if (status === 401) headers.push(WWW_AUTHENTICATE);
  if (status === 429 || status === 503) headers.push(RETRY_AFTER);
  if (isLimited(r)) headers.push(...RATE_LIMIT_HEADERS);
  if (isMutation(r)) headers.push(REPLAYED);
  if (!headers.length) return undefined;
  return Object.fromEntries(headers.map((h) => [h.name, headerObject(h)]));
}

// The headers every route shares are written once, in components.headers.
const SHARED_HEADERS: ResponseHeader[] = [RETRY_AFTER, ...RATE_LIMIT_HEADERS, REPLAYED, WWW_AUTHENTICATE, ERROR_DETAIL];

function headerObject(h: ResponseHeader): Json {
  if (SHARED_HEADERS.includes(h)) return { $ref: `#/components/headers/${h.name}` };
  return { description: h.description, required: h.required, schema: { type: "string" } };
}

function answerResponse(r: Route, answer: Answer): Json {
  const response: Json = { description: answer.description };
  if (answer.schema) response.content = { "application/json": { schema: jsonSchema(answer.schema) } };
  if (answer.bytes) response.content = { "*/*": { schema: { type: "string", format: "binary" } } };
  if (answer.events) response.content = { "text/event-stream": { schema: { type: "string" } } };
  if (answer.text) response.content = { [answer.text.split(";")[0]]: { schema: { type: "string" } } };
  const headers = headersOf(r, answer.status, answer.headers);
  if (headers) response.headers = headers;
  return response;
}

/** Every error a route answers, by status. */
export function errorStatuses(r: Route): Map<number, ErrorCode[]> {
  const own = r.errors.map((code): [ErrorCode, number] => [code, r.overrides?.[code] ?? STATUS[code]]);
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const [code, status] of [...own, ...sharedErrors(r)]) {
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b).map(([status, codes]) => [status, [...codes]]));
}

const pascal = (code: string) => code.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase());

/**
 * A route's error answers, each a reference into `shared` (components.responses): one entry per
 * status, set of codes and the headers the kind of route adds, so the 72 routes' 500 answers,
 * say, are a few entries rather than one each. The name says the status and the codes.
 */
function errorResponses(r: Route, shared: Record<string, Json>): Record<string, Json> {
  const responses: Record<string, Json> = {};
  for (const [status, unsorted] of errorStatuses(r)) {
    const codes = [...unsorted].sort();
    const kind = `${isLimited(r) ? "_Limited" : ""}${isMutation(r) ? "_Mutation" : ""}`;
    const name = `Error${status}_${codes.map(pascal).join("_")}${kind}`;
    const headers = headersOf(r, status, codes.some((code) => DETAILED_CODES.includes(code)) ? [ERROR_DETAIL] : []);
    const properties: Json = { error: { type: "string", enum: codes } };
    shared[name] ??= {
      description: codes.join(", "),
      content: {
        "application/json": {
          schema: { type: "object", required: ["error"], additionalProperties: false, properties },
        },
      },
      ...(headers ? { headers } : {}),
    };
    responses[String(status)] = { $ref: `#/components/responses/${name}` };
  }
  return responses;
}

function requestBody(r: Route): Json | undefined {
  if (!(r.body instanceof z.ZodObject)) return undefined;
  const schema = jsonSchema(r.body, "input");
  const required = r.bodyRequired === true || (Array.isArray(schema.required) && schema.required.length > 0);
  const type = r.multipart ? "multipart/form-data" : "application/json";
  return { required, content: { [type]: { schema } } };
}

function parameters(r: Route): Json[] {
  const pathShape = r.params instanceof z.ZodObject ? (r.params.shape as Record<string, z.ZodType>) : {};
  const pathParams = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: pathShape[m[1]] ? jsonSchema(pathShape[m[1]], "input") : { type: "string" },
  }));
  const shape = r.query instanceof z.ZodObject ? (r.query.shape as Record<string, z.ZodType>) : {};
  const queryParams = Object.entries(shape).map(([name, schema]) => ({
    name,
    in: "query",
    required: !schema.safeParse(undefined).success,
    schema: jsonSchema(schema, "input"),
  }));
  const headerParams = [...(r.headers ?? []), ...(isMutation(r) ? ["Idempotency-Key"] : [])].map((name) => ({
    name,
    in: "header",
    required: false,
    schema: { type: "string" },
  }));
  return [...pathParams, ...queryParams, ...headerParams];
}

const SECURITY = {
  none: [],
  public: [{}, { bearer: [] }],
  required: [{ bearer: [] }],
  moderator: [{ bearer: [] }],
} as const;

export const documentPath = (r: Route) => r.path.replace(/:([A-Za-z_]+)/g, "{$1}");

export function openApiDocument(routes: Route[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const sharedResponses: Record<string, Json> = {};
  for (const r of routes) {
    const path = documentPath(r);
    const operation: Json = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.tag],
      security: SECURITY[r.auth],
      parameters: parameters(r),
      // A route's own answer at an error's status (/readyz's 503 naming what is down) is the one documented.
      responses: {
        ...errorResponses(r, sharedResponses),
        ...Object.fromEntries([r.success, ...(r.also ?? [])].map((a) => [String(a.status), answerResponse(r, a)])),
      },
    };
    const body = requestBody(r);
    if (body) operation.requestBody = body;
    paths[path] = { ...paths[path], [r.method.toLowerCase()]: operation };
  }
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    uri: (id) => `${COMPONENTS}${id}`,
    unrepresentable: "any",
  }) as {
    schemas: Record<string, Json>;
  };
  const errorBody = { content: { "application/json": { schema: { $ref: `${COMPONENTS}Error` } } } };
  return {
    openapi: "3.1.0",
    info: {
      title: "Murmur",
      version: "0",
      description: [
        "Every path is also served under /v0, with or without a trailing slash.",
        'Every failure is exactly `{"error": CODE}` (INVALID_REQUEST and INVALID_QUERY may say what was wrong in the X-Error-Detail header, an extension);',
        "each operation lists the codes of each status, as shared components.responses named by status and codes.",
        "A path that exists with another method answers 405 METHOD_NOT_ALLOWED with `Allow`;",
        "an unknown path 404 NOT_FOUND; a request not whole in time 408, headers over 16 KiB 431,",
        "each INVALID_REQUEST with the connection closed (components.responses).",
      ].join(" "),
    },
    servers: [{ url: "/" }, { url: "/v0" }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
      headers: Object.fromEntries(
        SHARED_HEADERS.map((h) => [
          h.name,
          { description: h.description, required: h.required, schema: { type: "string" } },
        ]),
      ),
      // By name: the registry's order is the order its modules were first imported in, which a
      // process that imported others first (a test worker) would write differently.
      schemas: Object.fromEntries(
        Object.entries(schemas)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([id, { $schema: _, $id: __, ...schema }]) => [id, schema]),
      ),
      responses: {
        NotFound: { description: "NOT_FOUND: no such path", ...errorBody },
        RequestTimeout: { description: "INVALID_REQUEST: the request did not arrive whole in time", ...errorBody },
        HeadersTooLarge: { description: "INVALID_REQUEST: headers over 16 KiB", ...errorBody },
        MethodNotAllowed: {
          description: "METHOD_NOT_ALLOWED: the path exists with other methods",
          headers: {
            Allow: { description: "the methods served at the path", required: true, schema: { type: "string" } },
          },
          ...errorBody,
        },
        ...Object.fromEntries(Object.entries(sharedResponses).sort(([a], [b]) => a.localeCompare(b))),
      },
    },
    paths,
  };
}
