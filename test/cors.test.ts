// Browsers on other origins (CORS_ORIGINS; any by default, no credentials mode): preflight for
// REST and GraphQL alike, the allow-list, and a real page in headless Chromium calling both.
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => fs.existsSync(p));
if (!CHROMIUM) console.log("Chromium CORS test SKIPPED: install Debian's chromium to run it");

let server: TestServer;
let listed: TestServer;
let ana: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  listed = await startTestServer({ CORS_ORIGINS: "https://app.example, http://localhost:5173" });
  ana = await account(server, "cors_ana");
});
afterAll(async () => {
  await listed.close();
  await server.close();
});

/** Every request header the API or GraphQL reads, and every response header a client acts on. */
const REQUEST_HEADERS = [
  "authorization",
  "content-type",
  "idempotency-key",
  "if-match",
  "if-none-match",
  "range",
  "last-event-id",
  "x-graphql-yoga-csrf",
];
const EXPOSED_HEADERS = [
  "etag",
  "retry-after",
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "content-range",
  "idempotent-replayed",
  "www-authenticate",
  "location",
];
const names = (header: unknown) =>
  String(header)
    .split(",")
    .map((h) => h.trim().toLowerCase());

const preflight = (target: TestServer, url: string, origin: string, method: string) =>
  target.app.inject({
    method: "OPTIONS",
    url,
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "authorization, content-type, idempotency-key",
    },
  });

describe("CORS", () => {
  it.each([
    ["/notes", "POST"],
    ["/timeline/home", "GET"],
    ["/v0/accounts/cors_ana", "PATCH"],
    ["/drive/", "POST"],
    ["/graphql", "POST"],
  ])("answers the preflight of %s %s for any origin, without credentials", async (url, method) => {
    const answer = await preflight(server, url, "https://elsewhere.example", method);
    expect(answer.statusCode).toBe(204);
    expect(answer.headers["access-control-allow-origin"]).toBe("*");
    expect(answer.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(String(answer.headers["access-control-allow-methods"])).toContain(method);
    expect(names(answer.headers["access-control-allow-headers"])).toEqual(expect.arrayContaining(REQUEST_HEADERS));
  });

  it("marks answers readable by any origin and exposes the headers clients act on", async () => {
    const answer = await server.app.inject({
      method: "GET",
      url: "/timeline/global",
      headers: { origin: "https://elsewhere.example" },
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers["access-control-allow-origin"]).toBe("*");
    expect(names(answer.headers["access-control-expose-headers"])).toEqual(expect.arrayContaining(EXPOSED_HEADERS));
    const graphql = await server.app.inject({
      method: "POST",
      url: "/graphql",
      headers: { origin: "https://evil.example", "content-type": "application/json" },
      payload: JSON.stringify({ query: "{ __typename }" }),
    });
    // Yoga no longer echoes the origin with credentials allowed.
    expect(graphql.headers["access-control-allow-origin"]).toBe("*");
    expect(graphql.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("lets a page read a 401 over REST and GraphQL, so a client can refresh its token", async () => {
    for (const [method, url, payload] of [
      ["GET", "/timeline/home", undefined],
      ["POST", "/graphql", JSON.stringify({ query: "{ viewer { __typename } }" })],
    ] as const) {
      const answer = await server.app.inject({
        method,
        url,
        headers: {
          origin: "https://elsewhere.example",
          authorization: "Bearer forged",
          "content-type": "application/json",
        },
        payload,
      });
      expect(answer.statusCode, url).toBe(401);
      expect(answer.headers["www-authenticate"], url).toMatch(/^Bearer/);
      expect(answer.headers["access-control-allow-origin"], url).toBe("*");
      expect(names(answer.headers["access-control-expose-headers"]), url).toContain("www-authenticate");
    }
  });

  it("with CORS_ORIGINS, allows the listed origins only", async () => {
    const allowed = await preflight(listed, "/notes", "https://app.example", "POST");
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://app.example");
    const other = await preflight(listed, "/notes", "https://evil.example", "POST");
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe.skipIf(!CHROMIUM)("a page on another origin, in headless Chromium", () => {
  it("posts a note over REST, reads the home timeline and asks GraphQL, with a Bearer token", async () => {
    await server.app.listen({ port: 0, host: "127.0.0.1" });
    const api = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
    const script = `
      (async () => {
        const auth = { authorization: "Bearer ${ana.token}" };
        const created = await fetch("${api}/notes", {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ content: "from another origin" }),
        });
        const home = await (await fetch("${api}/timeline/home", { headers: auth })).json();
        const gql = await (await fetch("${api}/graphql", {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ query: "{ viewer { ... on QueryViewerSuccess { data { name } } } }" }),
        })).json();
        document.body.textContent = "RESULT " + JSON.stringify({
          created: created.status, home: home[0].content, viewer: gql.data.viewer.data.name,
        });
      })().catch((e) => { document.body.textContent = "RESULT " + JSON.stringify({ error: String(e) }); });`;
    const page = http.createServer((_request, response) => {
      response.setHeader("content-type", "text/html");
      response.end(`<!doctype html><html><body>waiting</body><script>${script}</script></html>`);
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    // Another origin: localhost rather than 127.0.0.1, and another port.
    const pageUrl = `http://localhost:${(page.address() as AddressInfo).port}/`;
    try {
      const dom = await new Promise<string>((resolve, reject) =>
        execFile(
          CHROMIUM as string,
          [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--virtual-time-budget=10000",
            "--dump-dom",
            pageUrl,
          ],
          { timeout: 60_000 },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      const result = JSON.parse(/RESULT (\{.*?\})</.exec(dom)?.[1] ?? "{}");
      expect(result).toEqual({ created: 201, home: "from another origin", viewer: "@cors_ana@murmur.test" });
    } finally {
      page.close();
    }
  }, 90_000);
});
