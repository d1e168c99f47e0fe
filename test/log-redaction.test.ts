// Credentials never reach the log (docs/faults.md#logs): a token sent as a query parameter
// (`access_token`, which live streams and GraphQL's EventSource take) is redacted in every line
// that shows a URL, Fastify's request line included, whatever route or failure logged it.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, redactUrlCredentials } from "../src/log.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const texts: string[] = [];
const captured = new Writable({
  write(chunk, _encoding, done) {
    texts.push(...chunk.toString().split("\n").filter(Boolean));
    done();
  },
});

let server: TestServer;
let alice: TestAccount;

beforeAll(async () => {
  server = await startTestServer({}, undefined, createLogger("debug", captured));
  alice = await account(server, "logalice");
});
afterAll(() => server?.close());

describe("request log lines", () => {
  it.each([
    ["a live stream that ends at once", (t: string) => `/streaming/list/1?access_token=${t}`],
    ["a route that takes no token in its query", (t: string) => `/notes/1?last=1&access_token=${t}`],
    ["an unknown path", (t: string) => `/nowhere?access_token=${t}`],
    ["a path that is not valid percent-encoding", (t: string) => `/notes/%zz?access_token=${t}`],
    ["a parameter name in percent-encoding", (t: string) => `/streaming/list/1?access%5Ftoken=${t}`],
    [
      "a GraphQL GET",
      (t: string) => `/graphql?query=${encodeURIComponent("{ viewer { __typename } }")}&access_token=${t}`,
    ],
  ])("never show the access_token of %s", async (_, url) => {
    const from = texts.length;
    const reqId = `redact-${from}`;
    const answer = await server.request("GET", url(alice.token), {
      headers: { "x-request-id": reqId, "x-graphql-yoga-csrf": "1" },
    });
    expect(answer.status).toBeGreaterThanOrEqual(200);
    const written = texts.slice(from);
    const own = written.filter((text) => text.includes(`"reqId":"${reqId}"`));
    expect(own.length).toBeGreaterThan(0);
    // The token, and any part of it long enough to be of use, is nowhere.
    for (const part of alice.token.split(".")) expect(written.join("\n")).not.toContain(part);
    const incoming = own.map((text) => JSON.parse(text)).find((line) => line.msg === "incoming request");
    expect(incoming.req.url).toMatch(/token=\[Redacted\]/);
    expect(incoming.req.url.startsWith(url("").replace(/=$/, ""))).toBe(true);
  });
});

describe("redactUrlCredentials", () => {
  it.each([
    ['{"url":"/s?access_token=abc.def&x=1"}', '{"url":"/s?access_token=[Redacted]&x=1"}'],
    ['{"msg":"GET /s?a=1&refresh_token=abc#top"}', '{"msg":"GET /s?a=1&refresh_token=[Redacted]#top"}'],
    ['{"url":"/s?ACCESS_TOKEN=abc def"}', '{"url":"/s?ACCESS_TOKEN=[Redacted] def"}'],
    // A quote in the value (escaped in JSON) ends it, so the line stays JSON.
    ['{"url":"/s?access_token=a\\"b"}', '{"url":"/s?access_token=[Redacted]\\"b"}'],
    ['{"url":"/s?before_id=12&token="}', '{"url":"/s?before_id=12&token="}'],
    ['{"msg":"a=b"}', '{"msg":"a=b"}'],
  ])("%s", (line, expected) => {
    expect(redactUrlCredentials(line)).toBe(expected);
    JSON.parse(redactUrlCredentials(line));
  });
});
