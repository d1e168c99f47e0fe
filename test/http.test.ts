// The HTTP edge (docs/http.md#paths): paths at / and /v0 with or without a trailing slash, and bad
// input always answered with the documented {"error": CODE}, never a 500.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../src/rest/routes.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const registration = (name: string) => ({
  name,
  email: `${name}@example.com`,
  passphrase: "correct-horse-battery",
  captcha_token: "ok",
});

describe("paths", () => {
  it.each(["/accounts", "/accounts/", "/v0/accounts", "/v0/accounts/"])("POST %s registers", async (path) => {
    const name = `p${path.replace(/\W/g, "")}${path.length}`;
    const answer = await server.request("POST", path, { body: registration(name) });
    expect(answer.status).toBe(200);
    expect(answer.body.name).toBe(`@${name}@murmur.test`);
  });

  it("serves GET under /v0 with a trailing slash", async () => {
    await server.request("POST", "/accounts", { body: registration("slashy") });
    for (const path of ["/accounts/slashy", "/accounts/slashy/", "/v0/accounts/slashy", "/v0/accounts/slashy/"]) {
      const answer = await server.request("GET", path);
      expect(answer.status, path).toBe(200);
      expect(answer.body.name).toBe("@slashy@murmur.test");
    }
  });

  it("answers an unknown route with 404 NOT_FOUND", async () => {
    for (const path of ["/nope", "/v0/nope", "/accounts/a/b/c", "/v1/accounts"]) {
      const answer = await server.request("GET", path);
      expect(answer.status, path).toBe(404);
      expect(answer.body).toEqual({ error: "NOT_FOUND" });
    }
  });

  it("answers a known path with the wrong method with 405 METHOD_NOT_ALLOWED and Allow", async () => {
    const answer = await server.request("DELETE", "/login");
    expect(answer.status).toBe(405);
    expect(answer.body).toEqual({ error: "METHOD_NOT_ALLOWED" });
    expect(answer.headers.allow).toContain("POST");
    const v0 = await server.request("PUT", "/v0/accounts/someone/");
    expect(v0.status).toBe(405);
    expect(String(v0.headers.allow)).toMatch(/GET/);
  });
});

describe("bad input", () => {
  it("answers malformed JSON with 400 INVALID_REQUEST", async () => {
    for (const payload of ["{bad", "[", '{"name": }', "nul", '"just a string', "{}}"]) {
      const answer = await server.request("POST", "/accounts", {
        payload,
        headers: { "content-type": "application/json" },
      });
      expect(answer.status, payload).toBe(400);
      // The body is exactly the code (docs/http.md#errors); X-Error-Detail (extension, README:
      // Errors) says what was wrong.
      expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
      expect(answer.headers["x-error-detail"]).toBe("the body is not valid JSON");
    }
  });

  it("answers a body that is not an object, or has wrong member types, with INVALID_REQUEST naming the member", async () => {
    const cases: [unknown, string][] = [
      [[], "body: Invalid input: expected object, received array"],
      ["text", "body: Invalid input: expected object, received string"],
      [42, "body: Invalid input: expected object, received number"],
      [null, "body member `name`: missing (string required)"],
      [{ ...registration("typed"), name: 7 }, "body member `name`: Invalid input: expected string, received number"],
      [{ name: "x" }, "body member `email`: missing (string required)"],
    ];
    for (const [body, detail] of cases) {
      const answer = await server.request("POST", "/accounts", { body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
      expect(answer.headers["x-error-detail"]).toBe(detail);
    }
  });

  it("names the query parameter and the rule in an INVALID_REQUEST's X-Error-Detail", async () => {
    const answer = await server.request("GET", "/timeline/global?has_attachment=yes");
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    expect(answer.headers["x-error-detail"]).toMatch(/^query member `has_attachment`: .*"true"\|"false"/);
  });

  it("answers a JSON body over 1 MiB with 413 PAYLOAD_TOO_LARGE", async () => {
    const answer = await server.request("POST", "/accounts", {
      body: { ...registration("huge"), bio: "x".repeat(1024 * 1024) },
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ error: "PAYLOAD_TOO_LARGE" });
  });

  it("answers an unsupported content type with 400 INVALID_REQUEST", async () => {
    const answer = await server.request("POST", "/login", {
      payload: "name=a",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    expect(answer.headers["x-error-detail"]).toBe("the body's content type is not taken here: send application/json");
  });

  it("reads an empty JSON body as none", async () => {
    const answer = await server.request("POST", "/login", {
      payload: "",
      headers: { "content-type": "application/json" },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    expect(answer.headers["x-error-detail"]).toBe("body member `name`: missing (string required)");
  });

  it("never answers 500 to odd strings in paths and bodies", async () => {
    const odd = [
      "%00",
      "%E0%A4%A",
      "..%2F..%2Fetc%2Fpasswd",
      "a".repeat(3000),
      "😀",
      "\u202e",
      "'; DROP TABLE accounts;--",
    ];
    for (const text of odd) {
      const get = await server.request("GET", `/accounts/${encodeURIComponent(text)}`);
      expect([400, 404], text).toContain(get.status);
      expect(Object.keys(get.body)).toEqual(["error"]);
      const post = await server.request("POST", "/login", {
        body: { name: text, passphrase: text, captcha_token: "ok" },
      });
      expect([400, 403], text).toContain(post.status);
      expect(Object.keys(post.body)).toEqual(["error"]);
    }
  });
});

describe("service endpoints", () => {
  it("answers /healthz and /readyz", async () => {
    expect((await server.request("GET", "/healthz")).status).toBe(200);
    const ready = await server.request("GET", "/readyz");
    expect({ status: ready.status, body: ready.body }).toEqual({
      status: 200,
      body: { status: "ready", checks: { database: "up", storage: "up" } },
    });
  });

  it("serves the OpenAPI document of every route in the table, and the docs page", async () => {
    const answer = await server.request("GET", "/openapi.json");
    expect(answer.status).toBe(200);
    for (const r of routes) {
      const path = r.path.replace(/:([A-Za-z_]+)/g, "{$1}");
      expect(answer.body.paths[path]?.[r.method.toLowerCase()], `${r.method} ${path}`).toBeDefined();
    }
    const docs = await server.request("GET", "/docs/");
    expect(docs.status).toBe(200);
    expect(String(docs.headers["content-type"])).toContain("text/html");
  });

  it("serves GraphiQL at /graphql to a browser", async () => {
    const answer = await server.request("GET", "/graphql", { headers: { accept: "text/html" } });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("GraphiQL");
  });
});
