// GraphQL's timeline pages answered as REST's are: the query's selection of notes compiled once
// into SQL that writes each note's JSON, so a page never becomes JavaScript objects. Through the
// executor, a home page cost ~1.5x REST's CPU (pg parsing its rows into objects, the resolvers,
// yoga's Fetch-API round, JSON.stringify); compiled, about REST's own (bench/README.md).
//
// Only what is proven equal is compiled: one query, without directives, of one timeline field
// (home, global, an account's, a list's) whose note fields each carry their SQL (projected.ts;
// compiled-walk.ts walks them). The first request of a document with its variables goes through
// yoga, which validates and bounds it; once that has answered data without errors, a plan for
// that text and those variables is kept, and later requests of the same are answered here. Anything else, and any refusal or failure here, is the
// executor's as before. test/graphql-compiled.test.ts holds every answer equal to the executor's.
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  parse,
  type ValueNode,
} from "graphql";
import { Prisma, queryRows } from "../db/client.ts";
import type { Context } from "../domain/context.ts";
import * as lists from "../domain/lists/service.ts";
import { PAGE, type TimelineQuery } from "../domain/timelines/page.ts";
import * as timelines from "../domain/timelines/service.ts";
import { type Viewer, viewerOf } from "../projection/field.ts";
import { noteStatements } from "../projection/note.ts";
import { keyOf, leaf, NotCompiled, no, type SqlOf, Walk } from "./compiled-walk.ts";
import { page } from "./connection.ts";
import { CACHED_DOCUMENT_CHARS, CACHED_DOCUMENT_MAX } from "./document-cache.ts";

/** One field of a selection: its response key and what it writes. */
interface Selected<T> {
  key: string;
  value: T;
}

/** What a root connection selects, written in JavaScript around the notes' JSON from SQL. */
type ConnectionField =
  | { kind: "typename"; name: string }
  | { kind: "edges"; edge: Selected<"cursor" | "node" | "typename">[] }
  | { kind: "pageInfo"; fields: Selected<PageInfoField>[] };

type PageInfoField = "hasNextPage" | "hasPreviousPage" | "startCursor" | "endCursor" | "__typename";

export interface CompiledPage {
  /** The root field's response key. */
  key: string;
  field: "homeTimeline" | "globalTimeline" | "accountTimeline" | "listTimeline";
  first: number | undefined;
  query: Omit<TimelineQuery, "limit">;
  /** accountTimeline's name, listTimeline's id. */
  target: string | undefined;
  connection: Selected<ConnectionField>[];
  /** The statement writing the Note selected of each note a page picks, built once per kind of caller. */
  statement: (page: Prisma.Sql, viewer: Viewer) => Prisma.Sql;
}

const ROOTS = new Set(["homeTimeline", "globalTimeline", "accountTimeline", "listTimeline"]);

/** The plan of a document for these variables, or undefined when the executor must answer it. */
export function compilePage(
  schema: GraphQLSchema,
  text: string,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): CompiledPage | undefined {
  let document: DocumentNode;
  try {
    document = parse(text, { noLocation: true });
  } catch {
    return undefined;
  }
  try {
    return compile(schema, document, operationName, variables);
  } catch (err) {
    if (err instanceof NotCompiled) return undefined;
    throw err;
  }
}

function compile(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): CompiledPage {
  const fragments = new Map<string, FragmentDefinitionNode>();
  const operations: OperationDefinitionNode[] = [];
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    else if (definition.kind === Kind.OPERATION_DEFINITION) operations.push(definition);
    else no();
  }
  const operation =
    (operationName === undefined && operations.length === 1
      ? operations[0]
      : operations.find((o) => operationName !== undefined && o.name?.value === operationName)) ?? no();
  if (operation.operation !== "query" || operation.directives?.length) no();
  const defaults = new Map<string, ValueNode>();
  for (const definition of operation.variableDefinitions ?? []) {
    if (definition.directives?.length) no();
    if (definition.defaultValue) defaults.set(definition.variable.name.value, definition.defaultValue);
  }
  const walk = new Walk(schema, fragments, variables, defaults);
  const roots = walk.fieldsOf(operation.selectionSet, "Query");
  if (roots.length !== 1 || !ROOTS.has(roots[0].name.value)) no();
  const root = roots[0];
  const field = root.name.value as CompiledPage["field"];
  const query: CompiledPage["query"] = {};
  let first: number | undefined;
  let target: string | undefined;
  for (const { name, value } of root.arguments ?? []) {
    switch (name.value) {
      case "first":
        first = walk.intArgument(value);
        break;
      case "after":
        query.beforeId = walk.stringArgument(value);
        break;
      case "hasAttachment":
      case "noNsfw":
        query[name.value] = walk.booleanArgument(value);
        break;
      case "name":
        if (field !== "accountTimeline") no();
        target = walk.stringArgument(value);
        break;
      case "listId":
        if (field !== "listTimeline") no();
        target = walk.stringArgument(value);
        break;
      default:
        no();
    }
  }
  if ((field === "accountTimeline" || field === "listTimeline") && target === undefined) no();
  let node: SqlOf | undefined;
  const connection = walk.fieldsOf(root.selectionSet, "NoteConnection").map((f): Selected<ConnectionField> => {
    if (f.arguments?.length) no();
    switch (f.name.value) {
      case "__typename":
        return { key: keyOf(f), value: { kind: "typename", name: "NoteConnection" } };
      case "edges":
        return {
          key: keyOf(f),
          value: {
            kind: "edges",
            edge: walk.fieldsOf(f.selectionSet, "NoteEdge").map((e) => {
              if (e.name.value === "node") {
                if (node || e.arguments?.length) no();
                node = walk.object(e.selectionSet, "Note");
                return { key: keyOf(e), value: "node" };
              }
              const name = leaf(e);
              if (name !== "cursor" && name !== "__typename") no();
              return { key: keyOf(e), value: name === "cursor" ? "cursor" : "typename" };
            }),
          },
        };
      case "pageInfo":
        return {
          key: keyOf(f),
          value: {
            kind: "pageInfo",
            fields: walk.fieldsOf(f.selectionSet, "PageInfo").map((p) => {
              const name = leaf(p);
              if (!["hasNextPage", "hasPreviousPage", "startCursor", "endCursor", "__typename"].includes(name)) no();
              return { key: keyOf(p), value: name as PageInfoField };
            }),
          },
        };
      default:
        return no();
    }
  });
  const draw: SqlOf = node ?? (() => Prisma.sql`NULL`);
  return { key: keyOf(root), field, first, query, target, connection, statement: noteStatements(draw) };
}

/** A page's row: the note's id (its cursor) and its JSON. */
interface Row {
  id: bigint;
  node: string;
}

/** The notes of the plan's timeline, through the same service its field calls. */
function timelineOf(ctx: Context, plan: CompiledPage, query: TimelineQuery): Promise<Row[]> {
  const viewer = viewerOf(ctx);
  const load = (c: Context, page: Prisma.Sql) => queryRows<Row>(c.db, plan.statement(page, viewer));
  switch (plan.field) {
    case "homeTimeline":
      return timelines.timeline(ctx, "home", query, load);
    case "globalTimeline":
      return timelines.timeline(ctx, "global", query, load);
    case "accountTimeline":
      return timelines.accountTimeline(ctx, plan.target as string, query, load);
    case "listTimeline":
      return lists.listNotes(ctx, plan.target as string, query, load);
  }
}

/** The whole answer to the plan's document, `{"data": ...}`, as the executor would give it. */
export async function answerPage(ctx: Context, plan: CompiledPage): Promise<string> {
  const { items, hasNextPage } = await page({ first: plan.first, after: plan.query.beforeId }, PAGE, (after, limit) =>
    timelineOf(ctx, plan, { ...plan.query, beforeId: after, limit }),
  );
  const cursor = (row: Row | undefined) => (row ? `"${row.id}"` : "null");
  const fields = plan.connection.map(({ key, value }) => {
    let json: string;
    if (value.kind === "typename") json = `"${value.name}"`;
    else if (value.kind === "edges") {
      const edges = items.map(
        (row) =>
          `{${value.edge
            .map(
              (e) => `"${e.key}":${e.value === "node" ? row.node : e.value === "cursor" ? cursor(row) : '"NoteEdge"'}`,
            )
            .join(",")}}`,
      );
      json = `[${edges.join(",")}]`;
    } else {
      const of: Record<PageInfoField, string> = {
        hasNextPage: String(hasNextPage),
        hasPreviousPage: "false",
        startCursor: cursor(items[0]),
        endCursor: cursor(items[items.length - 1]),
        __typename: '"PageInfo"',
      };
      json = `{${value.fields.map(({ key, value: name }) => `"${key}":${of[name]}`).join(",")}}`;
    }
    return `"${key}":${json}`;
  });
  return `{"data":{"${plan.key}":{${fields.join(",")}}}}`;
}

export class CompiledPages {
  constructor(private readonly schema: GraphQLSchema) {}

  readonly #plans = new Map<string, CompiledPage | null>();
  /** The characters of the documents' text held, bounded as yoga's parse cache is (document-cache.ts). */
  #chars = 0;

  /**
   * The key of a request body that may have a plan: a query, its operation's name and its
   * variables (a plan holds their values: a client polling the newest page sends the same ones).
   * A plan's arguments are scalars, so a body with any other variable has none: its variables
   * are never serialised, however deep a client nested them. The key is a JSON array of the body
   * as parsed, which is what the executor reads: bodies share one only when the executor reads
   * them alike (a name null or absent, variables null, {} or absent, -0 and 0, a member named
   * twice and its last value); never an empty name and none, nor a name and text split at a NUL
   * elsewhere, nor a number JSON cannot write (test/graphql-compiled.test.ts).
   */
  static keyOf(body: unknown) {
    if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
    const { query, variables = {}, operationName, ...rest } = body as Record<string, unknown>;
    if (typeof query !== "string" || Object.keys(rest).length) return undefined;
    if (typeof variables !== "object" || Array.isArray(variables)) return undefined;
    if (operationName != null && typeof operationName !== "string") return undefined;
    const given = (variables ?? {}) as Record<string, unknown>;
    for (const value of Object.values(given)) {
      const scalar =
        value === null ||
        typeof value === "string" ||
        typeof value === "boolean" ||
        (typeof value === "number" && Number.isFinite(value));
      if (!scalar) return undefined;
    }
    const key = JSON.stringify([operationName ?? null, query, given]);
    return { key, query, operationName: operationName ?? undefined, variables: given };
  }

  planOf(body: unknown): CompiledPage | undefined {
    const found = CompiledPages.keyOf(body);
    return (found && this.#plans.get(found.key)) ?? undefined;
  }

  /** After the executor answered `body`: a document answered with data and no errors is valid, and its plan is kept. */
  learn(body: unknown, status: number, answer: Buffer): void {
    const found = CompiledPages.keyOf(body);
    if (!found || found.key.length > CACHED_DOCUMENT_MAX || this.#plans.has(found.key) || status !== 200) return;
    const text = answer.toString();
    if (!text.startsWith('{"data":') || text.includes('"errors":')) return;
    this.#plans.set(found.key, compilePage(this.schema, found.query, found.operationName, found.variables) ?? null);
    this.#chars += found.key.length;
    // The oldest out first.
    for (const oldest of this.#plans.keys()) {
      if (this.#chars <= CACHED_DOCUMENT_CHARS) break;
      this.#plans.delete(oldest);
      this.#chars -= oldest.length;
    }
  }
}
