// openapi.json as clients meet it: valid OpenAPI 3.1, uploads and query parameters typed as they
// are sent, the route table's `auth` enforced for every route, and a client generated from the
// document by openapi-typescript type-checking against real answers. (Every answer of every test
// file is also held to the document: test/support/document-check.ts.)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../src/rest/routes.ts";
import { checkAnswer } from "./support/document-check.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const document = JSON.parse(fs.readFileSync(new URL("../openapi.json", import.meta.url), "utf8"));

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "oa_alice");
  bob = await account(server, "oa_bob");
});
afterAll(() => server.close());

const pathOf = (template: string) => template.replace(/:[A-Za-z_]+/g, "1");

// biome-ignore lint/suspicious/noExplicitAny: the document is JSON, read as it is
type Json = Record<string, any>;
/** An operation's answer at `status`, its shared component resolved. */
const answerAt = (p: string, method: string, status: string): Json => {
  const response = document.paths[p][method].responses[status];
  return response.$ref ? document.components.responses[response.$ref.split("/").pop()] : response;
};
const operations = Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([p, item]) =>
  Object.entries(item).map(([method, operation]) => ({ path: p, method, operation })),
);

describe("openapi.json", () => {
  it("is valid OpenAPI 3.1 (swagger-parser)", async () => {
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeTruthy();
    expect(document.openapi).toBe("3.1.0");
  });

  it("documents uploads as multipart/form-data and query parameters with their types", () => {
    const upload = document.paths["/drive"].post.requestBody.content;
    expect(Object.keys(upload)).toEqual(["multipart/form-data"]);
    expect(upload["multipart/form-data"].schema.properties.file).toMatchObject({ type: "string", format: "binary" });
    const params = (p: string, m: string) =>
      Object.fromEntries(
        document.paths[p][m].parameters.map((x: { name: string; schema: unknown }) => [x.name, x.schema]),
      );
    expect(params("/notifications", "get")).toMatchObject({
      limit: { type: "integer", minimum: 1, maximum: 50 },
      include_read: { type: "boolean" },
    });
    expect(params("/timeline/{timeline_type}", "get")).toMatchObject({
      has_attachment: { type: "boolean" },
      no_nsfw: { type: "boolean" },
      before_id: { type: "string", pattern: "^[0-9]{1,20}$" },
    });
  });

  it("documents the shared answers: 401 with WWW-Authenticate, 429 and 503 with Retry-After, X-RateLimit-*", () => {
    const responses = Object.fromEntries(
      ["200", "401", "403", "429", "503"].map((status) => [
        status,
        answerAt("/timeline/{timeline_type}", "get", status),
      ]),
    );
    expect(responses["401"].content["application/json"].schema.properties.error.enum).toEqual(
      expect.arrayContaining(["UNAUTHORIZED", "INVALID_TOKEN", "EXPIRED_TOKEN"]),
    );
    expect(responses["403"].content["application/json"].schema.properties.error.enum).toContain("YOU_ARE_FROZEN");
    expect(responses["401"].headers["WWW-Authenticate"]).toBeDefined();
    expect(responses["429"].headers["Retry-After"]).toBeDefined();
    expect(responses["503"].headers["Retry-After"]).toBeDefined();
    expect(responses["200"].headers["X-RateLimit-Remaining"]).toBeDefined();
    const files = document.paths["/files/{file_id}"].get.responses;
    expect(Object.keys(files)).toEqual(expect.arrayContaining(["200", "206", "304", "416", "404"]));
    expect(answerAt("/files/{file_id}", "get", "404").content["application/json"].schema.properties.error.enum).toEqual(
      ["FILE_NOT_FOUND"],
    );
    expect(files["206"].headers["Content-Range"]).toBeDefined();
    expect(document.paths["/accounts/{account_name}"].patch.responses["202"]).toBeDefined();
    expect(document.components.responses.MethodNotAllowed.headers.Allow).toBeDefined();
  });

  it("names each operation as a client calls it, once (the route table's operationId)", () => {
    const ids = operations.map((o) => o.operation.operationId);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(routes.length);
    expect(routes.map((r) => r.operationId).sort()).toEqual([...ids].sort());
    const idOf = (p: string, method: string) => document.paths[p][method].operationId;
    expect(idOf("/timeline", "get")).toBe("getHomeTimeline");
    expect(idOf("/timeline/{timeline_type}", "get")).toBe("getTimeline");
    expect(idOf("/accounts/{account_name}/verify_email", "post")).toBe("verifyEmail");
    expect(idOf("/notes", "post")).toBe("createNote");
    expect(idOf("/drive", "post")).toBe("uploadDriveFile");
  });

  it("shares the error answers: every one a $ref into components.responses, each written once", () => {
    let errors = 0;
    for (const { path: p, method, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        // A route's own answer at an error status (/files' 416, /readyz's 503) has its own body.
        if (!response.$ref) {
          const own = routes.find((r) => r.operationId === operation.operationId);
          expect(
            [own?.success, ...(own?.also ?? [])].map((a) => String(a?.status)),
            `${method} ${p} ${status}`,
          ).toContain(status);
          continue;
        }
        errors += 1;
        const shared = answerAt(p, method, status);
        const codes = shared.content["application/json"].schema.properties.error.enum;
        expect(shared.description, `${method} ${p} ${status}`).toBe(codes.join(", "));
      }
    }
    const shared = Object.keys(document.components.responses).filter((name) => name.startsWith("Error"));
    expect(shared.length).toBeLessThan(errors / 5);
    // The answer of a code set names its status and codes: what a generated client's type is called.
    expect(document.paths["/notes"].post.responses["401"].$ref).toBe(
      "#/components/responses/Error401_ExpiredToken_InvalidToken_Unauthorized_Limited_Mutation",
    );
    // The body is exactly `{"error"}` (docs/http.md#errors); X-Error-Detail (extension) only where
    // INVALID_REQUEST or INVALID_QUERY may be answered.
    const badRequest = answerAt("/search/notes", "get", "400");
    expect(badRequest.content["application/json"].schema.properties.error.enum).toEqual([
      "INVALID_QUERY",
      "INVALID_REQUEST",
    ]);
    expect(Object.keys(badRequest.content["application/json"].schema.properties)).toEqual(["error"]);
    expect(badRequest.headers["X-Error-Detail"]).toEqual({ $ref: "#/components/headers/X-Error-Detail" });
    expect(answerAt("/notes", "post", "404").headers?.["X-Error-Detail"]).toBeUndefined();
  });

  it("types requests as tightly as the spec states them, rules the domain checks with its own codes", () => {
    const body = (p: string, method: string, type = "application/json") =>
      document.paths[p][method].requestBody.content[type].schema;
    const note = body("/notes", "post").properties;
    expect(note.visibility).toMatchObject({ type: "string", enum: ["public", "home", "followers", "direct"] });
    expect(note.content).toMatchObject({ type: "string", maxLength: 3000 });
    expect(note.cw_comment).toMatchObject({ maxLength: 256 });
    expect(note.attachment_file_ids).toMatchObject({ maxItems: 16, items: { pattern: "^[0-9]{1,20}$" } });
    expect(document.paths["/notes"].post.requestBody.required).toBe(true);
    expect(body("/notes/{note_id}/renote", "post").properties.visibility.enum).toHaveLength(4);
    const account = body("/accounts", "post").properties;
    expect(account.name).toMatchObject({
      minLength: 1,
      maxLength: 64,
      pattern: "^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$",
    });
    expect(account.email).toMatchObject({ format: "email", minLength: 7, maxLength: 319 });
    expect(account.passphrase).toMatchObject({ minLength: 8, maxLength: 512 });
    expect(body("/lists", "post").properties.title).toMatchObject({ minLength: 1, maxLength: 100 });
    expect(body("/lists/{list_id}", "post").properties.account_id).toMatchObject({ maxItems: 30 });
    expect(body("/drive", "post", "multipart/form-data").properties.name).toMatchObject({ maxLength: 256 });
    const timelineType = document.paths["/timeline/{timeline_type}"].get.parameters.find(
      (p: Json) => p.name === "timeline_type",
    );
    expect(timelineType.schema).toMatchObject({ type: "string", enum: ["home", "global"] });
    // Every member of every request body says what it is.
    for (const { path: p, method, operation } of operations) {
      for (const media of Object.values((operation.requestBody?.content ?? {}) as Record<string, Json>)) {
        for (const [name, member] of Object.entries((media.schema.properties ?? {}) as Record<string, Json>)) {
          expect(member.description, `${method} ${p} ${name}`).toEqual(expect.any(String));
        }
      }
    }
  });

  it("is held to by the answer check: undocumented members, codes and statuses are caught", () => {
    const json = { "content-type": "application/json" };
    const note = {
      id: "1",
      content: "x",
      cw_comment: "",
      visibility: "public",
      created_at: "2026-01-02T03:04:05.678Z",
      attachment_files: [],
    };
    expect(checkAnswer("POST", "/notes", 201, json, JSON.stringify(note))).toEqual([]);
    expect(checkAnswer("POST", "/notes", 201, json, JSON.stringify({ ...note, extra: 1 }))).toHaveLength(1);
    expect(checkAnswer("POST", "/v0/notes/", 418, json, "{}")).toHaveLength(1);
    // An error code the route does not declare: the drift the route table had (ACCOUNT_NOT_FOUND).
    expect(checkAnswer("GET", "/notes/1", 404, json, '{"error":"ACCOUNT_NOT_FOUND"}')).toHaveLength(1);
    expect(checkAnswer("GET", "/notes/1", 401, json, '{"error":"INVALID_TOKEN"}')).toHaveLength(1); // no header
  });
});

describe("the route table's auth, enforced", () => {
  const required = routes.filter((r) => r.auth === "required" || r.auth === "moderator");
  it.each(required.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s answers 401 UNAUTHORIZED with WWW-Authenticate without credentials",
    async (_name, r) => {
      const answer = await server.request(r.method, pathOf(r.path), { body: r.method === "GET" ? undefined : {} });
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 401, body: { error: "UNAUTHORIZED" } });
      expect(answer.headers["www-authenticate"]).toBe("Bearer");
    },
  );

  const moderator = routes.filter((r) => r.auth === "moderator");
  it.each(moderator.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s answers 403 NO_PERMISSION to a normal account",
    async (_name, r) => {
      const answer = await server.request(r.method, r.path.replace(":account_name", bob.name), {
        token: alice.token,
        body: {},
      });
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 403, body: { error: "NO_PERMISSION" } });
    },
  );

  const publicRoutes = routes.filter((r) => r.auth === "public");
  it.each(publicRoutes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s answers 401 INVALID_TOKEN to a forged token",
    async (_name, r) => {
      const answer = await server.request(r.method, pathOf(r.path), { headers: { authorization: "Bearer forged" } });
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 401, body: { error: "INVALID_TOKEN" } });
    },
  );

  it("GET /lists/accounts/{id} needs credentials (not a public operation: docs/http.md#public-operations)", async () => {
    const answer = await server.request("GET", `/lists/accounts/${alice.id}`);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 401, body: { error: "UNAUTHORIZED" } });
  });
});

describe("a client generated by openapi-typescript", () => {
  it("type-checks against the real answers of every kind of resource", async () => {
    // Real answers, each typed by the generated `paths` at its operation and status.
    const samples: { path: string; method: string; status: number; body: unknown }[] = [];
    const take = async (
      method: string,
      url: string,
      template: string,
      options: Parameters<TestServer["request"]>[2] = {},
    ) => {
      const answer = await server.request(method, url, options);
      samples.push({ path: template, method: method.toLowerCase(), status: answer.status, body: answer.body });
      return answer.body;
    };
    const file = await uploadFile(server, alice, await image("png", 8, 8), "dot.png");
    samples.push({ path: "/drive", method: "post", status: 200, body: file });
    const note = await take("POST", "/notes", "/notes", {
      token: alice.token,
      body: { content: "typed @oa_bob", attachment_file_ids: [file.id], cw_comment: "cw" },
    });
    await take("POST", `/notes/${note.id}/renote`, "/notes/{note_id}/renote", { token: bob.token, body: {} });
    await take("POST", `/notes/${note.id}/reply`, "/notes/{note_id}/reply", {
      token: bob.token,
      body: { content: "r" },
    });
    await take("POST", `/notes/${note.id}/reaction`, "/notes/{note_id}/reaction", {
      token: bob.token,
      body: { emoji: "👍" },
    });
    await take("POST", "/notes", "/notes", {
      token: alice.token,
      body: { content: "dm", visibility: "direct", send_to: bob.id },
    });
    await take("POST", `/accounts/${alice.name}/follow`, "/accounts/{account_name}/follow", { token: bob.token });
    await take("GET", `/notes/${note.id}`, "/notes/{note_id}");
    await take("GET", "/timeline/home", "/timeline/{timeline_type}", { token: bob.token });
    await take("GET", `/timeline/accounts/${alice.name}`, "/timeline/accounts/{account_name}");
    await take("GET", "/timeline/conversations", "/timeline/conversations", { token: bob.token });
    await take("GET", "/search/notes?query=typed", "/search/notes");
    await take("GET", "/notifications?include_read=true", "/notifications", { token: alice.token });
    await take("GET", "/drive", "/drive", { token: alice.token });
    await take("GET", `/accounts/${alice.name}`, "/accounts/{account_name}", { token: alice.token });
    await take("PATCH", `/accounts/${alice.name}`, "/accounts/{account_name}", {
      token: alice.token,
      body: { nickname: "Alice", bio: "typed" },
    });
    const list = await take("POST", "/lists", "/lists", { token: alice.token, body: { title: "t", public: true } });
    await take("POST", `/lists/${list.id}`, "/lists/{list_id}", { token: alice.token, body: { account_id: [bob.id] } });
    await take("GET", `/lists/${list.id}`, "/lists/{list_id}");
    await take("GET", "/follow_requests", "/follow_requests", { token: alice.token });
    await take("POST", "/refresh", "/refresh", { body: { refresh_token: alice.refreshToken } });
    await take("GET", "/notes/1", "/notes/{note_id}");
    await take("GET", "/timeline/home", "/timeline/{timeline_type}");
    expect(new Set(samples.map((s) => s.status))).toEqual(new Set([200, 201, 401, 404]));

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-client-"));
    try {
      fs.writeFileSync(path.join(dir, "api.d.ts"), astToString(await openapiTS(structuredClone(document))));
      const lines = samples.map(
        (s, i) =>
          `export const answer${i}: paths[${JSON.stringify(s.path)}][${JSON.stringify(s.method)}]["responses"][${s.status}]["content"]["application/json"] = ${JSON.stringify(s.body)};`,
      );
      fs.writeFileSync(path.join(dir, "answers.ts"), `import type { paths } from "./api";\n${lines.join("\n")}\n`);
      const program = ts.createProgram([path.join(dir, "answers.ts")], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        target: ts.ScriptTarget.ES2022,
        types: [],
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(diagnostics).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("catches a wrong visibility or timeline type at compile time, and takes a Blob as the upload's file (README recipe)", async () => {
    // The README's recipe: openapi-typescript types `format: binary` as Blob.
    const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
    const api = astToString(
      await openapiTS(structuredClone(document), {
        transform: (schema) => (schema.format === "binary" ? BLOB : undefined),
      }),
    );
    // Each @ts-expect-error must meet an error: a line it no longer fails on is a diagnostic too.
    const client = `import type { operations, paths } from "./api";
type NoteBody = paths["/notes"]["post"]["requestBody"]["content"]["application/json"];
export const note: NoteBody = { content: "hi", visibility: "followers" };
// @ts-expect-error: no such visibility
export const wrongVisibility: NoteBody = { content: "hi", visibility: "everyone" };
// @ts-expect-error: POST /notes takes a body
export const noBody: operations["createNote"]["requestBody"] = undefined;
type TimelineType = paths["/timeline/{timeline_type}"]["get"]["parameters"]["path"]["timeline_type"];
export const global: TimelineType = "global";
// @ts-expect-error: no such timeline
export const wrongTimeline: TimelineType = "local";
type Upload = operations["uploadDriveFile"]["requestBody"]["content"]["multipart/form-data"];
export const upload: Upload = { file: new Blob([new Uint8Array([1])], { type: "image/png" }), name: "dot.png" };
`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-client-"));
    try {
      fs.writeFileSync(path.join(dir, "api.d.ts"), api);
      fs.writeFileSync(path.join(dir, "client.ts"), client);
      const program = ts.createProgram([path.join(dir, "client.ts")], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
        types: [],
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map(
          (d) =>
            `${d.file?.getLineAndCharacterOfPosition(d.start ?? 0).line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
        );
      expect(diagnostics).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
