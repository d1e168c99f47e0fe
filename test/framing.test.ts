// One framing per answer: an answer with both Transfer-Encoding: chunked and
// Content-Length is refused by undici (HPE_UNEXPECTED_CONTENT_LENGTH), and a proxy that trusts
// the length leaves the chunks' end on a kept-alive connection, where it is read as the start of
// the next answer. Every GraphQL answer that yoga streams (multipart/mixed, text/event-stream),
// from the executor, past a compiled plan, refused or replayed, read off a raw socket.
import net, { type AddressInfo } from "node:net";
import type { Counter } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let port: number;
let author: TestAccount;
let fan: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  await server.app.listen({ port: 0, host: "127.0.0.1" });
  port = (server.app.server.address() as AddressInfo).port;
  ({ alice: author, follower: fan } = await cast(server, { alice: "fr_author", follower: "fr_fan" }));
  for (const content of ["one", "two", "three"]) await act.post(server, author, { content });
});
afterAll(() => server?.close());

interface RawAnswer {
  status: number;
  head: string;
  /** Header lines by lower-case name, each value as many times as it came. */
  headers: Map<string, string[]>;
  body: Buffer;
}

/**
 * One HTTP/1.1 connection read as bytes: each answer framed by its Content-Length when it has
 * one (as a proxy trusting the length reads it), else by its chunks, else by the connection's
 * end; whatever follows an answer must be the next one's status line.
 */
class RawConnection {
  readonly #socket: net.Socket;
  #buffered = Buffer.alloc(0);
  #ended = false;
  #wake: () => void = () => {};

  constructor() {
    this.#socket = net.connect(port, "127.0.0.1");
    this.#socket.on("data", (data) => {
      this.#buffered = Buffer.concat([this.#buffered, data]);
      this.#wake();
    });
    this.#socket.on("error", () => {});
    this.#socket.on("close", () => {
      this.#ended = true;
      this.#wake();
    });
  }

  get ended() {
    return this.#ended;
  }

  async #more(): Promise<void> {
    if (this.#ended) throw new Error(`connection ended; unread: ${JSON.stringify(this.#buffered.toString("latin1"))}`);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no answer within 10 s")), 10_000);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async #line(): Promise<string> {
    for (;;) {
      const eol = this.#buffered.indexOf("\r\n");
      if (eol !== -1) {
        const line = this.#buffered.subarray(0, eol).toString("latin1");
        this.#buffered = this.#buffered.subarray(eol + 2);
        return line;
      }
      await this.#more();
    }
  }

  async #bytes(count: number): Promise<Buffer> {
    while (this.#buffered.length < count) await this.#more();
    const bytes = this.#buffered.subarray(0, count);
    this.#buffered = this.#buffered.subarray(count);
    return bytes;
  }

  /** Sends a POST /graphql of `body` (JSON) and reads its answer. */
  async post(body: unknown, headers: Record<string, string> = {}): Promise<RawAnswer> {
    const payload = Buffer.from(JSON.stringify(body));
    const lines = Object.entries({
      host: "murmur.test",
      "content-type": "application/json",
      "content-length": String(payload.length),
      ...headers,
    }).map(([name, value]) => `${name}: ${value}\r\n`);
    this.#socket.write(Buffer.concat([Buffer.from(`POST /graphql HTTP/1.1\r\n${lines.join("")}\r\n`), payload]));
    return this.answer();
  }

  /** Sends a GET (no body); its answer is read next. */
  get(target: string, headers: Record<string, string> = {}): void {
    const lines = Object.entries({ host: "murmur.test", ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
    this.#socket.write(`GET ${target} HTTP/1.1\r\n${lines.join("")}\r\n`);
  }

  async answer(): Promise<RawAnswer> {
    const answer = await this.head();
    answer.body = await this.#body(answer.headers);
    return answer;
  }

  /** An answer's status line and headers, its body left unread. */
  async head(): Promise<RawAnswer> {
    const statusLine = await this.#line();
    expect(statusLine, "what follows the previous answer").toMatch(/^HTTP\/1\.1 \d{3} /);
    const head = [statusLine];
    const headers = new Map<string, string[]>();
    for (;;) {
      const line = await this.#line();
      if (line === "") break;
      head.push(line);
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
    return { status: Number(statusLine.split(" ")[1]), head: head.join("\n"), headers, body: Buffer.alloc(0) };
  }

  async #body(headers: Map<string, string[]>): Promise<Buffer> {
    const length = headers.get("content-length");
    let body: Buffer;
    if (length) body = await this.#bytes(Number(length[0]));
    else if (headers.get("transfer-encoding")?.some((value) => /chunked/i.test(value))) {
      const chunks: Buffer[] = [];
      for (;;) {
        const size = Number.parseInt(await this.#line(), 16);
        if (size === 0) break;
        chunks.push(await this.#bytes(size));
        await this.#bytes(2);
      }
      // The trailer section, empty here, ends with an empty line.
      while ((await this.#line()) !== "");
      body = Buffer.concat(chunks);
    } else {
      while (!this.#ended) await this.#more().catch(() => {});
      body = this.#buffered;
      this.#buffered = Buffer.alloc(0);
    }
    return body;
  }

  close() {
    this.#socket.destroy();
  }
}

/** Exactly one framing: a Content-Length, or chunked Transfer-Encoding, or (closing) neither. */
function expectOneFraming(answer: RawAnswer, what: string) {
  const length = answer.headers.get("content-length") ?? [];
  const coding = answer.headers.get("transfer-encoding") ?? [];
  expect(length.length + coding.length, `${what}:\n${answer.head}`).toBeLessThanOrEqual(1);
  if (length.length + coding.length === 0) {
    expect(answer.headers.get("connection"), `${what}: framed by the connection's end`).toEqual(["close"]);
  }
}

/** The one part of a multipart/mixed answer (yoga's boundary "-"), parsed. */
function onlyPart(answer: RawAnswer | string) {
  const text = typeof answer === "string" ? answer : answer.body.toString();
  const parts = text.split("\r\n---").slice(1, -1);
  expect(parts, text).toHaveLength(1);
  const [, json] = parts[0].split("\r\n\r\n");
  return JSON.parse(json);
}

async function answeredBy(by: "plan" | "executor"): Promise<number> {
  const counter = server.services.metrics.registry.getSingleMetric("murmur_graphql_compiled_pages_total");
  const { values } = await (counter as Counter).get();
  return values.find((v) => v.labels.answered_by === by)?.value ?? 0;
}

const MIXED = { accept: "multipart/mixed" };
const PAGE = "{ homeTimeline(first: 2) { ... on NoteConnection { edges { node { id content } } } } }";

describe("an answer has one framing", () => {
  it("multipart/mixed from the executor and beside a compiled plan, kept alive without desync", async () => {
    const bearer = { authorization: `Bearer ${fan.token}` };
    const connection = new RawConnection();
    try {
      const executed = await connection.post({ query: "{ __typename }" }, MIXED);
      expectOneFraming(executed, "a query as multipart/mixed");
      expect(executed.status).toBe(200);
      expect(executed.headers.get("content-type")?.[0]).toMatch(/^multipart\/mixed/);
      expect(onlyPart(executed)).toEqual({ data: { __typename: "Query" } });

      // The page's plan is learnt (the executor's JSON answer), then answers it.
      const first = await connection.post({ query: PAGE }, bearer);
      expectOneFraming(first, "a timeline page through the executor");
      const planned = await answeredBy("plan");
      const second = await connection.post({ query: PAGE }, bearer);
      expectOneFraming(second, "a timeline page from its plan");
      expect(await answeredBy("plan")).toBe(planned + 1);
      expect(JSON.parse(second.body.toString())).toEqual(JSON.parse(first.body.toString()));

      // A plan writes JSON: asked for multipart/mixed, the executor answers, in one framing.
      const mixed = await connection.post({ query: PAGE }, { ...bearer, ...MIXED });
      expectOneFraming(mixed, "a planned page as multipart/mixed");
      expect(await answeredBy("plan")).toBe(planned + 1);
      expect(onlyPart(mixed)).toEqual(JSON.parse(first.body.toString()));
      const contents = onlyPart(mixed).data.homeTimeline.edges.map(
        (e: { node: { content: string } }) => e.node.content,
      );
      expect(contents).toEqual(["three", "two"]);

      // Refusals as multipart/mixed: a syntax error, a field that is not there, an operation
      // that cannot be told.
      for (const body of [
        { query: "{ homeTimeline(" },
        { query: "{ nothingHere }" },
        { query: "query A { __typename } query B { __typename }" },
      ]) {
        const refused = await connection.post(body, MIXED);
        expectOneFraming(refused, `${body.query} as multipart/mixed`);
        expect(refused.status, refused.body.toString()).toBeGreaterThanOrEqual(400);
      }
      // A subscription is not answered as multipart/mixed (yoga's rule): refused at once.
      const subscription = await connection.post({ query: "subscription { globalTimeline { __typename } }" }, MIXED);
      expectOneFraming(subscription, "a subscription as multipart/mixed");
      expect(subscription.status).toBe(406);
      // And the connection still answers in step.
      const last = await connection.post({ query: "{ __typename }" });
      expectOneFraming(last, "the last answer");
      expect(JSON.parse(last.body.toString())).toEqual({ data: { __typename: "Query" } });
      expect(connection.ended).toBe(false);
    } finally {
      connection.close();
    }
  });

  it("a replay of an Idempotency-Key answered as multipart/mixed", async () => {
    const connection = new RawConnection();
    try {
      const headers = { ...MIXED, authorization: `Bearer ${fan.token}`, "idempotency-key": "framing-1" };
      const body = { query: 'mutation { createList(title: "framed") { __typename } }' };
      const first = await connection.post(body, headers);
      expectOneFraming(first, "a mutation as multipart/mixed");
      expect(onlyPart(first).data.createList.__typename).toBe("MutationCreateListSuccess");
      // As an answer recorded before yoga's connection headers were left out was kept.
      await server.services.db.$executeRaw`
        UPDATE idempotency_records SET headers = headers || '{"transfer-encoding": "chunked", "connection": "keep-alive"}'
        WHERE key = 'framing-1'`;
      const replayed = await connection.post(body, headers);
      expectOneFraming(replayed, "its replay");
      expect(replayed.headers.get("idempotent-replayed")).toEqual(["true"]);
      expect(replayed.body.toString()).toBe(first.body.toString());
      const last = await connection.post({ query: "{ __typename }" });
      expect(JSON.parse(last.body.toString())).toEqual({ data: { __typename: "Query" } });
    } finally {
      connection.close();
    }
  });

  it("text/event-stream: a query and a subscription, chunked, the connection closed with it", async () => {
    for (const query of ["{ __typename }", "subscription { globalTimeline { __typename } }"]) {
      const connection = new RawConnection();
      try {
        const target = `/graphql?query=${encodeURIComponent(query)}&access_token=${fan.token}`;
        connection.get(target, { accept: "text/event-stream" });
        if (query.startsWith("subscription")) {
          // The stream goes on: its framing is in its head.
          const head = await connection.head();
          expect(head.status).toBe(200);
          expectOneFraming(head, "a subscription as text/event-stream");
          expect(head.headers.get("transfer-encoding")).toEqual(["chunked"]);
          expect(head.headers.get("connection")).toEqual(["close"]);
          continue;
        }
        const answer = await connection.answer();
        expectOneFraming(answer, `${query} as text/event-stream`);
        expect(answer.body.toString()).toContain('data: {"data":{"__typename":"Query"}}');
      } finally {
        connection.close();
      }
    }
  });

  it("undici (Node's fetch) reads each of them", async () => {
    const url = `http://127.0.0.1:${port}/graphql`;
    const post = (query: string, accept: string) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept, authorization: `Bearer ${fan.token}` },
        body: JSON.stringify({ query }),
      });
    for (let i = 0; i < 2; i++) {
      const json = await post(PAGE, "application/json");
      const mixed = await post(PAGE, "multipart/mixed");
      expect(mixed.status).toBe(200);
      expect(onlyPart(await mixed.text())).toEqual(await json.json());
    }
    const refused = await post("{ nothingHere }", "multipart/mixed");
    expect(refused.status).toBeGreaterThanOrEqual(400);
    await refused.text();
  });
});
