// GraphQL is bounded before anything runs (docs/http.md#graphql-bounds): too many aliases or root
// fields, too deep, too costly (lists by their page size), too long, or batched: HTTP 400 with
// `errors`, no SQL sent. And the endpoint's HTTP edges: CSRF prevention, 415 in the documented
// shape.
import v8 from "node:v8";
import vm from "node:vm";
import { complexityFromQuery } from "@pothos/plugin-complexity";
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ALIASES, MAX_COST, MAX_DEPTH, MAX_ROOT_FIELDS } from "../src/graphql/bounds.ts";
import { DocumentCache } from "../src/graphql/document-cache.ts";
import { schema } from "../src/graphql/index.ts";
import { type CountingApp, countingApp } from "./support/counting.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let counting: CountingApp;
beforeAll(async () => {
  server = await startTestServer();
  counting = await countingApp(server);
});
afterAll(async () => {
  await counting.close();
  await server.close();
});

/** POSTs `body` as JSON to /graphql of the counting app: its answer and the SQL it sent. */
async function post(body: unknown, headers: Record<string, string> = {}) {
  let answer: Awaited<ReturnType<typeof counting.app.inject>> | undefined;
  const { queries } = await counting.count(async () => {
    answer = await counting.app.inject({
      method: "POST",
      url: "/graphql",
      headers: { "content-type": "application/json", ...headers },
      payload: JSON.stringify(body),
    });
    return answer;
  });
  if (!answer) throw new Error("no answer");
  return { status: answer.statusCode, body: answer.json(), queries };
}

const aliases = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(" ")} }`;

describe("GraphQL bounds", () => {
  it("refuses 1,000 aliases of searchNotes with 400 before any SQL, the RSS all but unchanged", async () => {
    const query = aliases(1000, 'searchNotes(query: "x") { ... on NoteConnection { edges { cursor } } }');
    // A first request warms up what any request does once (code compiled lazily: Node 24 grows
    // its RSS by some 12 MB there); the refusal itself must hold no memory per alias.
    await post({ query: "{ __typename }" });
    const rss = process.memoryUsage().rss;
    const answer = await post({ query });
    const grown = process.memoryUsage().rss - rss;
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].message).toMatch(/alias|token/i);
    expect(answer.body.data).toBeUndefined();
    expect(answer.queries).toBe(0);
    // RSS also holds garbage not yet collected: a bound, not an exact figure (12 MB seen on a
    // busy machine); that nothing ran is what `queries` proves.
    expect(grown).toBeLessThan(24 * 1024 * 1024);
  });

  it(`allows ${MAX_ALIASES} aliases and refuses ${MAX_ALIASES + 1}`, async () => {
    expect((await post({ query: aliases(MAX_ALIASES, "__typename") })).status).toBe(200);
    const refused = await post({ query: aliases(MAX_ALIASES + 1, "__typename") });
    expect(refused.status).toBe(400);
    expect(refused.queries).toBe(0);
  });

  it(`refuses more than ${MAX_ROOT_FIELDS} root fields, fragments counted`, async () => {
    const fields = Array.from({ length: MAX_ROOT_FIELDS + 1 }, (_, i) => `f${i}: __typename`);
    const query = `{ ...A ...B } fragment A on Query { ${fields.slice(0, 15).join(" ")} } fragment B on Query { ${fields.slice(15).join(" ")} }`;
    const answer = await post({ query });
    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((e: { message: string }) => e.message).join()).toMatch(/alias|root fields/i);
  });

  it(`refuses a document deeper than ${MAX_DEPTH} levels`, async () => {
    // note -> author ... each level a selection; renotes of renotes nest without end.
    const nested = (depth: number): string => (depth === 0 ? "id" : `id renote { ${nested(depth - 1)} }`);
    const deep = `{ note(id: "1") { ... on QueryNoteSuccess { data { ${nested(MAX_DEPTH)} } } } }`;
    const answer = await post({ query: deep });
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].extensions.code).toBe("QUERY_DEPTH");
    expect(answer.queries).toBe(0);
  });

  it(`refuses a document costing more than ${MAX_COST.toLocaleString("en")}, lists counted by their page size`, async () => {
    const page =
      "edges { node { id content author { name } reactionCount reactionCounts { emoji count } attachments { url mime nsfw } } }";
    const query = aliases(MAX_ALIASES, `searchNotes(query: "x", first: 100) { ... on NoteConnection { ${page} } }`);
    const answer = await post({ query });
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].extensions.code).toBe("QUERY_COMPLEXITY");
    expect(answer.queries).toBe(0);
    // One such page is well within the bound.
    const one = await post({
      query: `{ searchNotes(query: "x", first: 100) { ... on NoteConnection { ${page} } } }`,
    });
    expect(one.status).toBe(200);
  });

  it("counts a page by its size whatever `first` says: out of range, the field itself answers INVALID_REQUEST", async () => {
    const page =
      "edges { node { id content author { name } reactionCount reactionCounts { emoji count } attachments { url mime nsfw } } }";
    const query = `{
      huge: searchNotes(query: "x", first: 100000000) { __typename ... on DomainError { code } ... on NoteConnection { ${page} } }
      negative: searchNotes(query: "x", first: -100000000) { __typename ... on DomainError { code } ... on NoteConnection { ${page} } }
    }`;
    const answer = await post({ query });
    expect(answer.status).toBe(200);
    const refused = { __typename: "DomainError", code: "INVALID_REQUEST" };
    expect(answer.body.data).toEqual({ huge: refused, negative: refused });
  });

  it("counts a page's rows even when nothing of them is selected", async () => {
    const bare = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: searchNotes(query: "x", first: 100) { __typename }`).join(" ")} }`;
    const answer = await post({ query: bare(1) });
    expect(answer.status).toBe(200);
    const { complexity } = complexityFromQuery(bare(1), { schema });
    expect(complexity).toBeGreaterThanOrEqual(100);
  });

  it("refuses a document too long to parse (over the token limit)", async () => {
    const query = `{ ${"__typename ".repeat(6000)} }`;
    const answer = await post({ query });
    expect(answer.status).toBe(400);
    expect(answer.queries).toBe(0);
  });

  it("refuses a batched request (a JSON array of operations)", async () => {
    const answer = await post([{ query: "{ __typename }" }, { query: "{ __typename }" }]);
    expect(answer.status).toBe(400);
    expect(answer.body.errors.length).toBeGreaterThan(0);
  });
});

describe("documents kept between requests", () => {
  it("keeps no document, valid or refused, for long: 60 distinct ones of 1 MB leave the heap as it was", async () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const heapUsed = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const before = heapUsed();
    const comment = "x".repeat(1_000_000);
    const tokens = "a ".repeat(450_000);
    for (let i = 0; i < 30; i++) {
      // Within the body limit and the token limit (a comment is no token): answered.
      expect((await post({ query: `{ __typename } # ${i} ${comment}` })).status).toBe(200);
      // Over the token limit: refused.
      expect((await post({ query: `{ f${i} ${tokens} }` })).status).toBe(400);
    }
    expect(heapUsed() - before).toBeLessThan(20 * 1024 * 1024);
  });

  it("bounds its cache by the text it holds, least recently used out first, long documents never in", () => {
    const cache = new DocumentCache(100, 40);
    const doc = (text: string) => parse(text);
    const a = `{ a ${"x ".repeat(15)}}`;
    const b = `{ b ${"y ".repeat(15)}}`;
    const c = `{ c ${"z ".repeat(15)}}`;
    cache.set(a, doc(a));
    cache.set(b, doc(b));
    expect(cache.get(a)).toBeDefined();
    cache.set(c, doc(c));
    // a was used after b: b goes first.
    expect(cache.get(b)).toBeUndefined();
    expect(cache.get(a)).toBeDefined();
    expect(cache.get(c)).toBeDefined();
    expect(cache.size).toBeLessThanOrEqual(100);
    const long = `{ d ${"w ".repeat(30)}}`;
    cache.set(long, doc(long));
    expect(cache.get(long)).toBeUndefined();
  });
});

describe("the /graphql endpoint's HTTP edges", () => {
  it("refuses a GET query without a CSRF header (a simple cross-site request), and runs it with one", async () => {
    const simple = await server.app.inject({ method: "GET", url: "/graphql?query=%7B__typename%7D" });
    expect(simple.statusCode).toBe(403);
    expect(simple.json()).toEqual({
      errors: [{ message: expect.any(String), extensions: { code: "CSRF_HEADER_MISSING" } }],
    });
    const preflighted = await server.app.inject({
      method: "GET",
      url: "/graphql?query=%7B__typename%7D",
      headers: { "x-graphql-yoga-csrf": "1", accept: "application/json" },
    });
    expect(preflighted.statusCode).toBe(200);
    expect(preflighted.json()).toEqual({ data: { __typename: "Query" } });
  });

  it("answers a body that is no GraphQL request with 400 and errors[], at once: {}, [], null, none, malformed JSON", async () => {
    for (const payload of ["{}", "[]", "null", "0", "", "{nope"]) {
      const answer = await server.app.inject({
        method: "POST",
        url: "/graphql",
        headers: { "content-type": "application/json" },
        payload,
      });
      expect({ payload, status: answer.statusCode }).toEqual({ payload, status: 400 });
      expect(answer.json(), payload).toEqual({
        errors: [expect.objectContaining({ message: expect.any(String), extensions: expect.anything() })],
      });
    }
  });

  it("answers an unsupported content type with 415 and errors[], not an empty body", async () => {
    const answer = await server.app.inject({
      method: "POST",
      url: "/graphql",
      headers: { "content-type": "text/plain", "x-graphql-yoga-csrf": "1" },
      payload: "<query/>",
    });
    expect(answer.statusCode).toBe(415);
    expect(answer.json()).toEqual({
      errors: [expect.objectContaining({ extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } })],
    });
    // A type Fastify has no parser for, and an empty body, are yoga's to refuse alike.
    for (const [type, payload] of [
      ["application/xml", "<query/>"],
      ["text/plain", ""],
    ]) {
      const other = await server.app.inject({
        method: "POST",
        url: "/graphql",
        headers: { "content-type": type, "x-graphql-yoga-csrf": "1" },
        payload,
      });
      expect({ type, status: other.statusCode, body: other.json() }).toEqual({
        type,
        status: 415,
        body: { errors: [expect.objectContaining({ extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } })] },
      });
    }
  });
});
