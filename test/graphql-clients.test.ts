// GraphQL as client tooling meets it: @graphql-codegen generates types from schema.graphql and
// our operations that compile and that real answers satisfy, and urql with graphcache's relayPagination pages every connection
// to its end against a real server, the page past the end being empty.
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { codegen } from "@graphql-codegen/core";
import * as typescript from "@graphql-codegen/typescript";
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

/** The list whose timeline is paged: made in beforeAll, named in its query by this token. */
const LIST_ID = "$LIST_ID";

interface Connection {
  field: string;
  /** Its arguments beside `first` and `after`. */
  args: string;
  /** The node fields read; the first names each node. */
  node: string;
  type: string;
  /** Its page size: `first` goes from 1 to it. */
  size: number;
}

/** Every paged list of the schema. */
const CONNECTIONS: Connection[] = [
  { field: "homeTimeline", args: "", node: "id", type: "NoteConnection", size: 20 },
  { field: "globalTimeline", args: "", node: "id", type: "NoteConnection", size: 20 },
  { field: "accountTimeline", args: 'name: "gc_dan"', node: "id", type: "NoteConnection", size: 20 },
  { field: "listTimeline", args: `listId: "${LIST_ID}"`, node: "id", type: "NoteConnection", size: 20 },
  { field: "conversation", args: 'name: "gc_dan"', node: "id", type: "NoteConnection", size: 20 },
  { field: "bookmarks", args: "", node: "id", type: "NoteConnection", size: 20 },
  { field: "searchNotes", args: 'query: "paged"', node: "id", type: "NoteConnection", size: 100 },
  { field: "driveFiles", args: "", node: "id", type: "DriveFileConnection", size: 100 },
  { field: "notifications", args: "includeRead: true", node: "id", type: "NotificationConnection", size: 50 },
  {
    field: "conversations",
    args: "",
    node: "lastNoteId account { name }",
    type: "ConversationConnection",
    size: 100,
  },
  { field: "followRequests", args: "", node: "id", type: "AccountConnection", size: 100 },
  { field: "listsOf", args: 'name: "gc_cleo"', node: "id", type: "ListConnection", size: 20 },
];

let listId = "";

const connectionQuery = ({ field, args, node, type }: Connection) => `
  query Page${field}($first: Int, $after: String) {
    ${field}(${args ? `${args.replace(LIST_ID, listId)}, ` : ""}first: $first, after: $after) {
      __typename
      ... on DomainError { code message }
      ... on ${type} {
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
  const list = await server.request("POST", "/lists", { token: cleo.token, body: { title: "paged" } });
  listId = list.body.id;
  await server.request("POST", `/lists/${listId}`, { token: cleo.token, body: { account_id: [dan.id] } });
  // Direct notes both ways between cleo and dan, and cleo's with three more partners.
  for (let i = 0; i < 3; i++) {
    await server.request("POST", "/notes", {
      token: i % 2 ? dan.token : cleo.token,
      body: { content: `direct ${i}`, visibility: "direct", send_to: i % 2 ? cleo.id : dan.id },
    });
  }
  for (const title of ["paged too", "paged three"]) {
    await server.request("POST", "/lists", { token: cleo.token, body: { title, public: true } });
  }
  // cleo approves follows itself: the three partners below ask to follow.
  await server.request("PATCH", `/accounts/${cleo.name}`, { token: cleo.token, body: { locked: true } });
  for (const name of ["gc_eve", "gc_fay", "gc_gus"]) {
    const partner = await account(server, name);
    await server.request("POST", `/accounts/${cleo.name}/follow`, { token: partner.token });
    await server.request("POST", "/notes", {
      token: partner.token,
      body: { content: "direct to cleo", visibility: "direct", send_to: cleo.id },
    });
  }
  const png = await image("png", 4, 4);
  for (let i = 0; i < 5; i++) await uploadFile(server, dan, png, `f${i}.png`);
  await server.app.listen({ port: 0, host: "127.0.0.1" });
  url = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}/graphql`;
});
afterAll(() => server.close());

/** A mutation beside the connection queries: NoteInput's enum and the DateTime scalar as inputs go through too. */
const CREATE_NOTE = `
  mutation CreateNote($input: NoteInput!) {
    createNote(input: $input) {
      __typename
      ... on DomainError { code }
      ... on MutationCreateNoteSuccess { data { id visibility createdAt renote { id } replyTo { id } } }
    }
  }`;

describe("@graphql-codegen", () => {
  it("generates schema and operation types that compile, and real answers type-check against them", async () => {
    const schema = parse(schemaText);
    const config = { scalars: { DateTime: "string", Upload: "unknown" } };
    // Two modules: typescript-operations 6 writes the schema types its operations use itself, so
    // in one file with the typescript plugin's output each enum would be declared twice.
    const schemaTypes = await codegen({
      schema,
      documents: [],
      plugins: [{ typescript: {} }],
      pluginMap: { typescript },
      filename: "schema-types.ts",
      config,
    });
    const operations = await codegen({
      schema,
      documents: [...CONNECTIONS.map(connectionQuery), CREATE_NOTE].map((text) => ({ document: parse(text) })),
      plugins: [{ typescriptOperations: {} }],
      pluginMap: { typescriptOperations },
      filename: "operations.ts",
      config,
    });
    expect(operations).toContain("export type PagehomeTimelineQuery");
    // Each connection's first page as the server answers it, typed by its generated query type,
    // and a note's input typed by the schema's.
    const answers: string[] = [
      'import type * as Op from "./operations.ts";',
      'import * as Schema from "./schema-types.ts";',
    ];
    for (const connection of CONNECTIONS) {
      const who = connection.field === "driveFiles" || connection.field === "notifications" ? dan : cleo;
      const answer = await server.request("POST", "/graphql", {
        token: who.token,
        body: { query: connectionQuery(connection), variables: { first: 2 } },
      });
      answers.push(
        `export const ${connection.field}: Op.Page${connection.field}Query = ${JSON.stringify(answer.body.data)};`,
      );
    }
    answers.push('export const input: Schema.NoteInput = { content: "hi", visibility: Schema.Visibility.Followers };');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-codegen-"));
    try {
      const files = { "schema-types.ts": schemaTypes, "operations.ts": operations, "answers.ts": answers.join("\n") };
      for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
      const program = ts.createProgram(
        Object.keys(files).map((name) => path.join(dir, name)),
        {
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          allowImportingTsExtensions: true,
          module: ts.ModuleKind.ESNext,
          moduleResolution: ts.ModuleResolutionKind.Bundler,
          target: ts.ScriptTarget.ES2022,
          lib: ["lib.es2022.d.ts"],
          types: [],
        },
      );
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => `${d.file?.fileName ?? ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
      expect(diagnostics).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("urql with graphcache's relayPagination", () => {
  const schema = graphqlSync({ schema: buildSchema(schemaText), source: getIntrospectionQuery() }).data as never;

  it.each(CONNECTIONS)("pages $field to its end, 2 at a time, and past it gets empty edges", async (connection) => {
    const { field } = connection;
    const who = field === "driveFiles" || field === "notifications" ? dan : cleo;
    const client = new Client({
      url,
      exchanges: [
        cacheExchange({
          schema,
          // A conversation entry has no id of its own: embedded in its edge.
          keys: { Conversation: () => null },
          resolvers: { Query: { [field]: relayPagination() } },
        }),
        fetchExchange,
      ],
      fetchOptions: { headers: { authorization: `Bearer ${who.token}` } },
      requestPolicy: "cache-first",
    });
    const query = connectionQuery(connection);
    const key = connection.node.split(" ")[0];
    let after: string | null = null;
    let pages = 0;
    let merged: {
      __typename: string;
      edges: { node: Record<string, string> }[];
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
    const ids = merged.edges.map((e) => e.node[key]);
    expect(ids.length).toBeGreaterThan(2);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pages).toBe(Math.ceil(ids.length / 2));
    // The pages merged are the whole list, as one page of the largest size gives it.
    const whole = await server.request("POST", "/graphql", {
      token: who.token,
      body: { query, variables: { first: connection.size } },
    });
    expect(whole.body.data[field].pageInfo.hasNextPage).toBe(false);
    expect(whole.body.data[field].edges.map((e: { node: Record<string, string> }) => e.node[key])).toEqual(ids);
    // Past the last cursor: empty edges and no next page, not NOTHING_LEFT.
    const past = await server.request("POST", "/graphql", {
      token: who.token,
      body: { query, variables: { first: 2, after: merged.pageInfo.endCursor } },
    });
    expect(past.body.data[field]).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it.each(CONNECTIONS)(
    "refuses $field's first outside 1..$size with INVALID_REQUEST saying the range, never one silent item",
    async (connection) => {
      for (const first of [0, -1, connection.size + 1]) {
        const answer = await server.request("POST", "/graphql", {
          token: cleo.token,
          body: { query: connectionQuery(connection), variables: { first } },
        });
        expect(answer.body.data[connection.field], String(first)).toEqual({
          __typename: "DomainError",
          code: "INVALID_REQUEST",
          message: `first must be 1 to ${connection.size}, was ${first}`,
        });
      }
    },
  );
});
