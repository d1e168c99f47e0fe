// Request ids: X-Request-Id honoured when sane and echoed, else a UUID; every log line of a
// request carries it, the caller's account once known, and a failed answer's error code.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.ts";
import { account, PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import { startInstance } from "./support/instances.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Line {
  reqId?: string;
  accountId?: string;
  errorCode?: string;
  msg: string;
  res?: { statusCode: number };
}

const lines: Line[] = [];
const texts: string[] = [];
const captured = new Writable({
  write(chunk, _encoding, done) {
    for (const text of chunk.toString().split("\n")) {
      if (!text) continue;
      texts.push(text);
      lines.push(JSON.parse(text));
    }
    done();
  },
});

let server: TestServer;
let alice: TestAccount;

beforeAll(async () => {
  server = await startTestServer({}, undefined, createLogger("info", captured));
  alice = await account(server, "rid_alice");
});
afterAll(async () => {
  await server.close();
});

const linesOf = (reqId: string) => lines.filter((line) => line.reqId === reqId);
const completed = (reqId: string) => linesOf(reqId).find((line) => line.msg === "request completed");

describe("request ids", () => {
  it("echo a sane X-Request-Id and log every line of the request under it", async () => {
    const answer = await server.request("GET", "/notes/1", {
      token: alice.token,
      headers: { "x-request-id": "trace 0001/abc" },
    });
    expect(answer.status).toBe(404);
    expect(answer.headers["x-request-id"]).toBe("trace 0001/abc");
    const own = linesOf("trace 0001/abc");
    expect(own.map((line) => line.msg)).toEqual(["incoming request", "request completed"]);
    // Said once a line, however many loggers could add it.
    for (const text of texts.filter((t) => t.includes("trace 0001/abc"))) {
      expect(text.split('"reqId"')).toHaveLength(2);
    }
    // The caller's account and the error code, on the line that says how the request ended.
    expect(completed("trace 0001/abc")).toMatchObject({
      accountId: alice.id,
      errorCode: "NOTE_NOT_FOUND",
      res: { statusCode: 404 },
    });
  });

  it("carry the request id on lines other loggers write during it (the mail queue's)", async () => {
    // Over a real connection: the body arrives in the socket's events, after the request began.
    const url = await server.app.listen({ port: 0, host: "127.0.0.1" });
    const answer = await fetch(`${url}/accounts`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "signup-1" },
      body: JSON.stringify({
        name: "rid_bob",
        email: "rid_bob@example.com",
        passphrase: PASSPHRASE,
        captcha_token: "ok",
      }),
    });
    expect(answer.status).toBe(200);
    expect(linesOf("signup-1").map((line) => line.msg)).toContain("mail queued");
    expect(completed("signup-1")?.errorCode).toBeUndefined();
  });

  it("name the account of a GraphQL caller, and the code of a refused one", async () => {
    const query = { query: "{ viewer { __typename ... on QueryViewerSuccess { data { id } } } }" };
    const ok = await server.request("POST", "/graphql", {
      body: query,
      token: alice.token,
      headers: { "x-request-id": "gql-1" },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.viewer.data.id).toBe(alice.id);
    expect(completed("gql-1")?.accountId).toBe(alice.id);
    const refused = await server.request("POST", "/graphql", {
      body: query,
      token: "not-a-token",
      headers: { "x-request-id": "gql-2" },
    });
    expect(refused.status).toBe(401);
    expect(completed("gql-2")).toMatchObject({ errorCode: "INVALID_TOKEN", res: { statusCode: 401 } });
    expect(completed("gql-2")?.accountId).toBeUndefined();
  });

  it("replace an id that is not sane (too long, not printable) with a fresh UUID", async () => {
    for (const sent of ["x".repeat(129), "tab\tinside", ""]) {
      const answer = await server.request("GET", "/healthz", { headers: { "x-request-id": sent } });
      const id = String(answer.headers["x-request-id"]);
      expect(id).toMatch(UUID);
      expect(completed(id)).toBeDefined();
    }
    const one = await server.request("GET", "/healthz");
    const two = await server.request("GET", "/healthz");
    expect(one.headers["x-request-id"]).toMatch(UUID);
    expect(one.headers["x-request-id"]).not.toBe(two.headers["x-request-id"]);
  });

  it("are unique across server processes, not a counter each process starts again", async () => {
    const env = { DATABASE_URL: await freshDatabase() };
    const instances = await Promise.all([startInstance(env), startInstance(env)]);
    try {
      const ids = await Promise.all(
        instances.map((instance) => fetch(`${instance.url}/healthz`).then((r) => r.headers.get("x-request-id"))),
      );
      for (const id of ids) expect(id).toMatch(UUID);
      expect(ids[0]).not.toBe(ids[1]);
      // An answer Fastify gives before any route (a malformed path) has one too.
      const malformed = await fetch(`${instances[0].url}/notes/%E0%A4%A`);
      expect(malformed.status).toBe(400);
      expect(malformed.headers.get("x-request-id")).toMatch(UUID);
    } finally {
      await Promise.all(instances.map((instance) => instance.stop()));
    }
  }, 120_000);
});
