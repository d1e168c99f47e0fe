// Behind the shipped nginx configuration (deploy/nginx.conf: proxy_request_buffering off, so a
// body is passed on as it arrives), an answer the server gives before it has read the request's
// body reaches the client: a JSON body over 1 MiB is our 413 PAYLOAD_TOO_LARGE, not nginx's 502
// (the server used to close the connection while nginx still sent the body).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JSON_BODY_LIMIT } from "../src/http/limits.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { nginxAvailable, startNginx, type TestNginx } from "./support/nginx.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

if (!nginxAvailable) console.warn("nginx is not installed: test/nginx.test.ts is skipped");

let server: TestServer;
let nginx: TestNginx;
let alice: TestAccount;

beforeAll(async () => {
  if (!nginxAvailable) return;
  server = await startTestServer();
  await server.app.listen({ port: 0, host: "127.0.0.1" });
  nginx = await startNginx([`127.0.0.1:${(server.app.server.address() as AddressInfo).port}`]);
  alice = await account(server, "nginx_alice");
});
afterAll(async () => {
  await nginx?.stop();
  await server?.close();
});

interface Sent {
  status: number;
  type: string;
  body: string;
}

/** Sends `body` through nginx, with its Content-Length or chunked, in pieces as a client would. */
function send(method: string, url: string, headers: Record<string, string>, body: Buffer, chunked = false) {
  return new Promise<Sent>((resolve) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port: nginx.port,
        method,
        path: url,
        headers: chunked
          ? { ...headers, "transfer-encoding": "chunked" }
          : { ...headers, "content-length": body.length },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, type: String(response.headers["content-type"]), body: text }),
        );
      },
    );
    // nginx answering early (its 502) and closing while the body is still being sent.
    request.on("error", (err) => resolve({ status: 0, type: "", body: err.message }));
    const write = async () => {
      for (let at = 0; at < body.length; at += 64 * 1024) {
        if (!request.write(body.subarray(at, at + 64 * 1024))) await new Promise((r) => request.once("drain", r));
      }
      request.end();
    };
    write().catch(() => {});
  });
}

/** A note's JSON of about `bytes`. */
const note = (bytes: number) => Buffer.from(JSON.stringify({ content: "x".repeat(bytes) }));

describe.skipIf(!nginxAvailable)("behind deploy/nginx.conf", () => {
  it("a JSON body over 1 MiB is our 413 PAYLOAD_TOO_LARGE, sent with its length or chunked", async () => {
    const auth = { authorization: `Bearer ${alice.token}`, "content-type": "application/json" };
    const answers: unknown[] = [];
    for (const size of [JSON_BODY_LIMIT + 1024, 2 * JSON_BODY_LIMIT, 8 * JSON_BODY_LIMIT]) {
      for (const chunked of [false, true]) {
        const answer = await send("POST", "/notes", auth, note(size), chunked);
        answers.push({ size, chunked, ...answer });
      }
    }
    expect(answers, nginx.errors()).toEqual(
      answers.map((sent) => ({
        ...(sent as object),
        status: 413,
        type: "application/json; charset=utf-8",
        body: '{"error":"PAYLOAD_TOO_LARGE"}',
      })),
    );
    // GraphQL's JSON bodies too.
    const graphql = await send("POST", "/graphql", auth, note(2 * JSON_BODY_LIMIT));
    expect(graphql.status, nginx.errors()).toBe(413);
    // And the server answers what comes next.
    const small = await send("POST", "/notes", auth, note(10));
    expect(small.status).toBe(201);
  });
});
