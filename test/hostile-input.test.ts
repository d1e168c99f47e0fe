// Hostile input (docs/faults.md#hostile-input) gets the documented 400, never a 500 nor a changed
// meaning: GraphQL variables nested 100,000 deep, a document nested 2,000 deep within the token
// limit, JSON bodies that are not UTF-8, a GraphQL multipart request of 10,000 parts.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_NESTING } from "../src/graphql/bounds.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "hostile_alice");
});
afterAll(() => server.close());

/** POSTs `payload` to /graphql as alice: its status and parsed body. */
async function graphql(payload: string | Buffer, contentType = "application/json") {
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: { "content-type": contentType, authorization: `Bearer ${alice.token}` },
    payload,
  });
  return { status: answer.statusCode, body: answer.json() };
}

const notesOf = (who: TestAccount) => server.services.db.note.count({ where: { authorId: BigInt(who.id) } });

describe("GraphQL variables", () => {
  // As JSON text: JSON.stringify itself would overflow the stack building it.
  const deep = `${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`;
  const deepList = `${"[".repeat(100_000)}1${"]".repeat(100_000)}`;

  it("nested 100,000 deep are the executor's to refuse (400) or leave unused (200), not a 500", async () => {
    const page = "query ($first: Int) { globalTimeline(first: $first) { __typename } }";
    for (const value of [deep, deepList]) {
      const refused = await graphql(`{"query":${JSON.stringify(page)},"variables":{"first":${value}}}`);
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0].message).toMatch(/Int cannot represent/);
      const unused = await graphql(`{"query":"{ __typename }","variables":{"v":${value}}}`);
      expect(unused).toEqual({ status: 200, body: { data: { __typename: "Query" } } });
    }
  });

  it("do not share a compiled page with other variables or another operation name", async () => {
    const page = "query ($first: Int) { globalTimeline(first: $first) { ... on NoteConnection { edges { cursor } } } }";
    const body = (variables: string, operationName = "") =>
      `{"query":${JSON.stringify(page)},"variables":${variables}${operationName}}`;
    // Answered once by the executor, then by its compiled plan.
    for (let i = 0; i < 2; i++) expect((await graphql(body('{"first":null}'))).status).toBe(200);
    // JSON writes 1e400 (Infinity) as null; an empty operation name was keyed as none.
    const infinite = await graphql(body('{"first":1e400}'));
    expect(infinite.status).toBe(400);
    expect(infinite.body.errors[0].message).toMatch(/Int cannot represent/);
    const unnamed = await graphql(body('{"first":null}', ',"operationName":""'));
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.data).toBeUndefined();
  });
});

describe("a GraphQL document nested 2,000 deep within the token limit", () => {
  it(`is a request error (400) past ${MAX_NESTING} brackets, not a stack overflow's 500`, async () => {
    for (const query of [
      `{ globalTimeline(first: ${"[".repeat(2000)}${"]".repeat(2000)}) { __typename } }`,
      `{ globalTimeline(first: ${"[".repeat(4900)}`,
      `{ a(b: ${"{c: ".repeat(1200)}`,
    ]) {
      const answer = await graphql(JSON.stringify({ query }));
      expect(answer.status).toBe(400);
      expect(answer.body.errors[0].message).toMatch(/nested deeper than/);
      expect(answer.body.data).toBeUndefined();
    }
    // Brackets in strings and comments are no nesting.
    const quoted = `{ __typename # ${"{".repeat(2000)}\n}`;
    expect((await graphql(JSON.stringify({ query: quoted }))).status).toBe(200);
  });
});

describe("a JSON body that is not UTF-8", () => {
  const content = (bytes: number[]) =>
    Buffer.concat([Buffer.from('{"content":"caf'), Buffer.from(bytes), Buffer.from('"}')]);

  it("is 400 INVALID_REQUEST on REST, nothing stored with U+FFFD in its place", async () => {
    const before = await notesOf(alice);
    for (const bytes of [[0xe9], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xff]]) {
      const answer = await server.request("POST", "/notes", {
        token: alice.token,
        headers: { "content-type": "application/json" },
        payload: content(bytes),
      });
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: { error: "INVALID_REQUEST" } });
    }
    expect(await notesOf(alice)).toBe(before);
    // UTF-8 itself is taken as it is.
    const valid = await server.request("POST", "/notes", {
      token: alice.token,
      headers: { "content-type": "application/json" },
      payload: content([0xc3, 0xa9]),
    });
    expect(valid.status).toBe(201);
    expect(valid.body.content).toBe("café");
  });

  it("is a request error (400 with errors) on GraphQL, nothing stored", async () => {
    const before = await notesOf(alice);
    const mutation = 'mutation { createNote(input: {content: "caf';
    const payload = Buffer.concat([
      Buffer.from(`{"query":${JSON.stringify(mutation).slice(0, -1)}`),
      Buffer.from([0xe9]),
      Buffer.from(`\\"}) { __typename } }"}`),
    ]);
    const answer = await graphql(payload);
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].message).toMatch(/UTF-8/);
    expect(answer.body.data).toBeUndefined();
    expect(await notesOf(alice)).toBe(before);
  });
});

describe("a GraphQL multipart request of 10,000 parts", () => {
  const UPLOAD = "mutation ($file: Upload!) { uploadFile(file: $file) { __typename ... on DomainError { code } } }";

  async function upload(extra: "files" | "fields", where: "before" | "after") {
    const form = new FormData();
    form.set("operations", JSON.stringify({ query: UPLOAD, variables: { file: null } }));
    form.set("map", JSON.stringify({ 0: ["variables.file"] }));
    const parts = () => {
      for (let i = 0; i < 10_000; i++) {
        if (extra === "files") form.append(`x${i}`, new Blob(["x"]), "x.txt");
        else form.append(`x${i}`, "x");
      }
    };
    if (where === "before") parts();
    form.append("0", new Blob([new Uint8Array(await image("png", 20, 20))]), "a.png");
    if (where === "after") parts();
    const encoded = new Response(form);
    return graphql(Buffer.from(await encoded.arrayBuffer()), encoded.headers.get("content-type") ?? "");
  }

  it("is refused whole, naming the parts limit (REST's INVALID_REQUEST), its file not kept", async () => {
    const files = () => server.services.db.driveFile.count({ where: { ownerId: BigInt(alice.id) } });
    const before = await files();
    for (const extra of ["files", "fields"] as const) {
      for (const where of ["before", "after"] as const) {
        const answer = await upload(extra, where);
        expect({ extra, where, ...answer }).toEqual({
          extra,
          where,
          status: 400,
          body: {
            errors: [
              {
                message: "A GraphQL multipart request has at most 3 parts: operations, map and one file.",
                extensions: { code: "INVALID_REQUEST" },
              },
            ],
          },
        });
      }
    }
    expect(await files()).toBe(before);
    expect(fs.readdirSync(server.services.storage.scratchDir)).toEqual([]);
  });
});
