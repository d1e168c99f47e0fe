// Holds every answer a test server gives to the committed openapi.json, as a client generated
// from it would: the status must be documented for the operation, the JSON body must match its
// schema strictly (no undocumented member, no undocumented error code), and the headers clients
// act on must be documented for that answer, the required ones present.
import fs from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { FastifyInstance } from "fastify";

type Json = Record<string, unknown>;

const document = JSON.parse(fs.readFileSync(new URL("../../openapi.json", import.meta.url), "utf8")) as {
  paths: Record<string, Record<string, Json>>;
  components: { responses: Record<string, Json>; headers: Record<string, Json> };
};

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(document, "openapi");

/** Headers a client acts on: any of these an answer carries must be documented for it. */
const CHECKED_HEADERS = [
  "retry-after",
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "etag",
  "content-range",
  "www-authenticate",
  "idempotent-replayed",
  "allow",
];

interface Template {
  path: string;
  regex: RegExp;
  literals: number;
}

const templates: Template[] = Object.keys(document.paths)
  .map((path) => ({
    path,
    regex: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    literals: path.split("/").filter((part) => part && !part.startsWith("{")).length,
  }))
  // Fastify prefers a static segment to a parameter: so does the lookup.
  .sort((a, b) => b.literals - a.literals);

/** Paths outside the route table, documented elsewhere (GraphQL, the document and its page). */
const UNDOCUMENTED = /^\/(graphql|openapi\.json|docs)(\/|$)/;

const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

function pathOf(url: string): string {
  let path = url.split("?")[0].replace(/\/{2,}/g, "/");
  if (path.startsWith("/v0/") || path === "/v0") path = path.slice(3) || "/";
  if (path.length > 1) path = path.replace(/\/$/, "");
  return path;
}

/** What is wrong with one answer, or nothing. */
export function checkAnswer(
  method: string,
  url: string,
  status: number,
  headers: Record<string, unknown>,
  body: string | undefined,
): string[] {
  const path = pathOf(url);
  if (UNDOCUMENTED.test(path) || method === "HEAD" || method === "OPTIONS") return [];
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    decoded = path;
  }
  const template = templates.find((t) => t.regex.test(path) || t.regex.test(decoded));
  const operation = template ? document.paths[template.path][method.toLowerCase()] : undefined;
  let response: Json | undefined;
  let where: string;
  // Where the answer's JSON schema is, as a pointer into the document.
  let schemaAt = "openapi#/components/schemas/Error";
  if (operation) {
    where = `${method} ${template?.path} ${status}`;
    response = (operation.responses as Record<string, Json>)[String(status)];
    if (!response) return [`${where}: undocumented status (${body ?? ""})`];
    const shared = typeof response.$ref === "string" ? response.$ref.split("/").pop() : undefined;
    if (shared) {
      response = document.components.responses[shared];
      schemaAt = `openapi#/components/responses/${pointer(shared)}/content/application~1json/schema`;
    } else {
      schemaAt = `openapi#/paths/${pointer(template?.path ?? "", method.toLowerCase(), "responses", String(status))}/content/application~1json/schema`;
    }
  } else {
    // An unknown path, or a path served with other methods: the shared answers.
    where = `${method} ${path} ${status}`;
    const shared: Record<number, string> = { 400: "", 429: "", 503: "", 404: "NotFound", 405: "MethodNotAllowed" };
    if (!(status in shared)) return [`${where}: undocumented status outside the route table`];
    if (status === 405 && !template) return [`${where}: 405 on a path that is not documented`];
    response = document.components.responses[shared[status]] ?? {
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  const problems: string[] = [];
  const content = response.content as Record<string, { schema: Json }> | undefined;
  const type = String(headers["content-type"] ?? "");
  if (content?.["application/json"]) {
    if (!type.startsWith("application/json")) problems.push(`${where}: content-type ${type}, documented JSON`);
    else {
      const validate = ajv.getSchema(schemaAt);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body ?? "");
      } catch {
        problems.push(`${where}: body is not JSON`);
      }
      if (validate && parsed !== undefined && !validate(parsed)) {
        problems.push(`${where}: ${ajv.errorsText(validate.errors)} in ${body?.slice(0, 300)}`);
      }
    }
  } else if (!content && body && body.length > 0) {
    problems.push(`${where}: a body where none is documented: ${body.slice(0, 200)}`);
  }
  const documented = (response.headers ?? {}) as Record<string, { required?: boolean; $ref?: string }>;
  const resolve = (h: { required?: boolean; $ref?: string }) =>
    h.$ref ? (document.components.headers[h.$ref.split("/").pop() ?? ""] as { required?: boolean }) : h;
  const names = new Map(Object.entries(documented).map(([name, h]) => [name.toLowerCase(), resolve(h)]));
  for (const name of CHECKED_HEADERS) {
    if (headers[name] !== undefined && !names.has(name)) problems.push(`${where}: undocumented header ${name}`);
  }
  for (const [name, h] of names) {
    if (h.required && headers[name] === undefined) problems.push(`${where}: missing header ${name}`);
  }
  return problems;
}

/** Checks every answer `app` sends; the mismatches are kept for the test file to fail on. */
export function checkEveryAnswer(app: FastifyInstance): string[] {
  const mismatches: string[] = [];
  app.addHook("onSend", async (request, reply, payload) => {
    const body = typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString() : undefined;
    const streamed = payload !== null && payload !== undefined && body === undefined;
    const problems = checkAnswer(
      request.method,
      request.url,
      reply.statusCode,
      reply.getHeaders(),
      streamed ? "<stream>" : body,
    );
    for (const problem of problems) {
      if (streamed && problem.includes("a body where none")) continue;
      mismatches.push(problem);
      console.error(`openapi.json mismatch: ${problem}`);
    }
    return payload;
  });
  return mismatches;
}
