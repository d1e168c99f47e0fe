// GraphQL as client tooling meets it: @graphql-codegen generates types from schema.graphql and
// our operations that compile, and urql with graphcache's relayPagination pages every connection
// to its end against a real server, the page past the end being empty.
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { codegen } from "@graphql-codegen/core";
import * as typescriptOperations from "@graphql-codegen/typescript-operations";
import { Client, fetchExchange } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";
import { buildSchema, getIntrospectionQuery, graphqlSync, parse } from "graphql";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const schemaText = fs.readFileSync(new URL("../schema.graphql", import.meta.url), "utf8");

/** Each connection field, its arguments beside `first` and `after`, and the node fields read. */
const CONNECTIONS: [string, string, string][] = [
  ["homeTimeline", "", "id"],
  ["globalTimeline", "", "id"],
  ["accountTimeline", 'name: "gc_dan"', "id"],
  ["bookmarks", "", "id"],
  ["searchNotes", 'query: "paged"', "id"],
  ["driveFiles", "", "id"],
  ["notifications", "includeRead: true", "id"],
];

const connectionQuery = (field: string, args: string, node: string) => `
  query Page${field}($first: Int, $after: String) {
    ${field}(${args ? `${args}, ` : ""}first: $first, after: $after) {
      __typename
      ... on DomainError { code }
      ... on ${field === "driveFiles" ? "DriveFileConnection" : field === "notifications" ? "NotificationConnection" : "NoteConnection"} {
        edges { cursor node { ${node} } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }`;

let server: TestServer;
let cleo: TestAccount;
let dan: TestAccount;
let url: string;
beforeAll(async () => {
  server = await startTestServer();
  cleo = await account(server, "gc_cleo");
  dan = await account(server, "gc_dan");
  await server.request("POST", `/accounts/${dan.name}/follow`, { token: cleo.token });
  for (let i = 0; i < 7; i++) {
    const note = await server.request("POST", "/notes", { token: dan.token, body: { content: `paged ${i}` } });
    await server.request("POST", `/notes/${note.body.id}/bookmark`, { token: cleo.token });
    await server.request("POST", `/notes/${note.body.id}/reaction`, { token: cleo.token, body: { emoji: "👍" } });
  }
  await server.request("POST", "/notes", { token: cleo.token, body: { content: "paged by cleo" } });
  const png = await image("png", 4, 4);
  for (let i = 0; i < 5; i++) await uploadFile(server, dan, png, `f${i}.png`);
  await server.app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}/graphql`;
});
afterAll(() => server.close());

describe("@graphql-codegen", () => {
  it("generates types for the schema and every connection query that compile", async () => {
    const output = await codegen({
      schema: parse(schemaText),
      documents: CONNECTIONS.map(([field, args, node]) => ({ document: parse(connectionQuery(field, args, node)) })),
      // typescript-operations 6 writes the schema types an operation uses itself (with the
      // typescript plugin beside it, each enum would be declared twice).
      plugins: [{ typescriptOperations: {} }],
      pluginMap: { typescriptOperations },
      filename: "graphql.ts",
      config: { scalars: { DateTime: "string", Upload: "unknown" } },
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-codegen-"));
    try {
      fs.writeFileSync(path.join(dir, "graphql.ts"), output);
      const program = ts.createProgram([path.join(dir, "graphql.ts")], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        target: ts.ScriptTarget.ES2022,
        lib: ["lib.es2022.d.ts"],
        types: [],
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(diagnostics).toEqual([]);
      expect(output).toContain("export type PagehomeTimelineQuery");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("urql with graphcache's relayPagination", () => {
  const schema = graphqlSync({ schema: buildSchema(schemaText), source: getIntrospectionQuery() }).data as never;

  it.each(CONNECTIONS)("pages %s to its end, 2 at a time, and past it gets empty edges", async (field, args, node) => {
    const who = field === "driveFiles" || field === "notifications" ? dan : cleo;
    const client = new Client({
      url,
      exchanges: [cacheExchange({ schema, resolvers: { Query: { [field]: relayPagination() } } }), fetchExchange],
      fetchOptions: { headers: { authorization: `Bearer ${who.token}` } },
      requestPolicy: "cache-first",
    });
    const query = connectionQuery(field, args, node);
    let after: string | null = null;
    let pages = 0;
    let merged: {
      __typename: string;
      edges: { node: { id: string } }[];
      pageInfo: { hasNextPage: boolean; endCursor: string };
    };
    do {
      const result = await client.query(query, { first: 2, after }).toPromise();
      expect(result.error, JSON.stringify(result.error)).toBeUndefined();
      merged = result.data[field];
      expect(merged.__typename, JSON.stringify(merged)).not.toBe("DomainError");
      after = merged.pageInfo.endCursor;
      pages += 1;
    } while (merged.pageInfo.hasNextPage && pages < 20);
    const ids = merged.edges.map((e) => e.node.id);
    expect(ids.length).toBeGreaterThan(2);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pages).toBe(Math.ceil(ids.length / 2));
    // Past the last cursor: empty edges and no next page, not NOTHING_LEFT.
    const past = await server.request("POST", "/graphql", {
      token: who.token,
      body: { query, variables: { first: 2, after: merged.pageInfo.endCursor } },
    });
    expect(past.body.data[field]).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it("refuses first outside 1..page size with INVALID_REQUEST, never one silent item", async () => {
    for (const first of [0, -1, 21]) {
      const answer = await server.request("POST", "/graphql", {
        token: cleo.token,
        body: { query: connectionQuery("homeTimeline", "", "id"), variables: { first } },
      });
      expect(answer.body.data.homeTimeline, String(first)).toEqual({
        __typename: "DomainError",
        code: "INVALID_REQUEST",
      });
    }
  });
});
