// GraphQL's timeline pages answered as REST's are: the query's selection of notes compiled once
// into SQL that writes each note's JSON, so a page never becomes JavaScript objects. Through the
// executor, a home page cost ~1.5x REST's CPU (pg parsing its rows into objects, the resolvers,
// yoga's Fetch-API round, JSON.stringify); compiled, about REST's own (bench/README.md).
//
// Only what is proven equal is compiled: one query, without directives, of one timeline field
// (home, global, an account's, a list's) selecting the note fields below. The first request of a
// document with its variables goes through yoga, which validates and bounds it; once that has
// answered data without errors, a plan for that text and those variables is kept, and later
// requests of the same are answered here. Anything else, and any refusal or failure here, is the
// executor's as before. test/graphql-compiled.test.ts holds every answer equal to the executor's.
import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  parse,
  type SelectionSetNode,
  type ValueNode,
} from "graphql";
import { Prisma, queryRows } from "../db/client.ts";
import type { Context } from "../domain/context.ts";
import { fileUrlSql, isoTimeSql } from "../domain/drive/urls.ts";
import * as lists from "../domain/lists/service.ts";
import { countsByEmoji, REACTIONS_SHOWN } from "../domain/reactions/shown.ts";
import { optionalAccount } from "../domain/sessions/caller.ts";
import { PAGE, type TimelineQuery } from "../domain/timelines/page.ts";
import * as timelines from "../domain/timelines/service.ts";
import { page } from "./connection.ts";
import { CACHED_DOCUMENT_CHARS, CACHED_DOCUMENT_MAX } from "./document-cache.ts";

/** One field of a selection: its response key and what it writes. */
interface Selected<T> {
  key: string;
  value: T;
}

/** SQL writing one value of a row, given the caller (its id is a parameter). */
type SqlOf = (env: Env) => Prisma.Sql;

interface Env {
  viewerId: bigint | undefined;
  publicUrl: string;
  localHost: string;
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
  node: SqlOf;
  /** A reaction count by emoji (Note.reactionCounts), when selected. */
  counts: SqlOf | undefined;
}

/** Thrown while compiling: this document is left to the executor. */
class NotCompiled extends Error {}

const no = (): never => {
  throw new NotCompiled();
};

/**
 * The fields of `selection` for an object of type `type`, in order, fragments spread: GraphQL's
 * CollectFields, for selections that repeat no response key (one that does is left to the
 * executor, which merges them). A fragment on another type of a union contributes nothing.
 */
function fieldsOf(
  selection: SelectionSetNode | undefined,
  type: string,
  doc: Doc,
  out: FieldNode[] = [],
  seen = new Set<string>(),
): FieldNode[] {
  if (!selection) return no();
  for (const s of selection.selections) {
    if (s.directives?.length) no();
    if (s.kind === Kind.FIELD) {
      const key = s.alias?.value ?? s.name.value;
      if (seen.has(key)) no();
      seen.add(key);
      out.push(s);
      continue;
    }
    const fragment = s.kind === Kind.FRAGMENT_SPREAD ? doc.fragments.get(s.name.value) : s;
    if (!fragment) return no();
    const on = fragment.typeCondition?.name.value;
    if (on === undefined || on === type) fieldsOf(fragment.selectionSet, type, doc, out, seen);
    else if (on !== "DomainError") no();
  }
  return out;
}

const keyOf = (f: FieldNode) => f.alias?.value ?? f.name.value;

/** A field without arguments or a selection of its own. */
function leaf(f: FieldNode): string {
  if (f.arguments?.length || f.selectionSet) no();
  return f.name.value;
}

/** `json_build_object` of the selected fields (PostgreSQL takes 50 pairs at most). */
function objectSql(fields: FieldNode[], column: (f: FieldNode) => SqlOf): SqlOf {
  if (fields.length === 0 || fields.length > 50) no();
  const parts = fields.map((f) => ({ key: Prisma.raw(`'${keyOf(f)}'`), value: column(f) }));
  return (env) =>
    Prisma.sql`json_build_object(${Prisma.join(
      parts.map((p) => Prisma.sql`${p.key}, ${p.value(env)}`),
      ", ",
    )})`;
}

const raw = (text: string): SqlOf => {
  const sql = Prisma.raw(text);
  return () => sql;
};

/**
 * An object of type `type` whose selection is among `columns` (fields without arguments or a
 * selection: their SQL) and `nested` (the others: what compiles them), and `__typename`.
 */
function objectOf(
  selection: SelectionSetNode | undefined,
  type: string,
  doc: Doc,
  columns: Record<string, SqlOf>,
  nested: Record<string, (f: FieldNode) => SqlOf> = {},
): SqlOf {
  return objectSql(fieldsOf(selection, type, doc), (f) => {
    const name = f.name.value;
    if (Object.hasOwn(nested, name)) return nested[name](f);
    if (f.arguments?.length || f.selectionSet) no();
    if (name === "__typename") return raw(`'${type}'`);
    return Object.hasOwn(columns, name) ? columns[name] : no();
  });
}

/** A field with a selection and no arguments. */
function selectionOf(f: FieldNode): SelectionSetNode | undefined {
  return f.arguments?.length ? no() : f.selectionSet;
}

/** DateTime as graphql-scalars writes it (Date#toISOString). */
const iso = (column: string): SqlOf => {
  const sql = isoTimeSql(Prisma.raw(column));
  return () => sql;
};

const fileUrlOf =
  (column: string, suffix?: string): SqlOf =>
  (env) =>
    fileUrlSql(env, Prisma.raw(column), suffix);

/** Account (account.ts) of the accounts row `a`. */
const ACCOUNT: Record<string, SqlOf> = {
  id: raw("a.id::text"),
  name: (env) => Prisma.sql`'@' || a.name || '@' || ${env.localHost}`,
  nickname: raw("a.nickname"),
  bio: raw("a.bio"),
  avatar: fileUrlOf("a.avatar_file_id"),
  header: fileUrlOf("a.header_file_id"),
  followedCount: raw("a.followers_count"),
  followingCount: raw("a.following_count"),
  noteCount: raw("a.notes_count"),
  locked: raw("a.locked"),
  // visibleEmail: to its owner only.
  email: (env) =>
    env.viewerId === undefined ? Prisma.sql`NULL::text` : Prisma.sql`CASE WHEN a.id = ${env.viewerId} THEN a.email END`,
};

/** Reaction (note.ts) of the reactions row `r`. */
const reactionColumns = (r: string): Record<string, SqlOf> => ({
  id: raw(`${r}.id::text`),
  emoji: raw(`${r}.emoji`),
  reactedBy: raw(`${r}.account_id::text`),
  createdAt: iso(`${r}.created_at`),
});

/** DriveFile (drive.ts) of the drive_files row `f`. */
const DRIVE_FILE: Record<string, SqlOf> = {
  id: raw("f.id::text"),
  name: raw("f.name"),
  authorId: raw("f.owner_id::text"),
  hash: raw("f.blurhash"),
  mime: raw("f.mime"),
  size: raw("f.size"),
  nsfw: raw("f.nsfw"),
  url: fileUrlOf("f.id"),
  thumbnail: (env) =>
    Prisma.sql`CASE WHEN f.thumbnail_size IS NULL THEN NULL ELSE ${fileUrlOf("f.id", "/thumbnail")(env)} END`,
};

/** A document's fragments, and the variables of the request its plan is for. */
interface Doc {
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  /** The operation's variables' defaults. */
  defaults: Map<string, ValueNode>;
}

/** An argument's value: a literal, or a variable's (its default when not given); undefined for null. */
function argumentValue(value: ValueNode | undefined, doc: Doc): unknown {
  switch (value?.kind) {
    case undefined:
    case Kind.NULL:
      return undefined;
    case Kind.INT:
    case Kind.STRING:
    case Kind.BOOLEAN:
      return value.value;
    case Kind.VARIABLE: {
      const name = value.name.value;
      if (name in doc.variables) return doc.variables[name] ?? undefined;
      const fallback = doc.defaults.get(name);
      return fallback?.kind === Kind.VARIABLE ? no() : argumentValue(fallback, doc);
    }
    default:
      return no();
  }
}

/** An Int argument (a literal's text, or a variable's number), or undefined for none. */
function intArgument(value: ValueNode | undefined, doc: Doc): number | undefined {
  const given = argumentValue(value, doc);
  if (given === undefined) return undefined;
  const first = Number(given);
  return Number.isInteger(first) ? first : no();
}

/** A String or ID argument, or undefined for none. */
function stringArgument(value: ValueNode | undefined, doc: Doc): string | undefined {
  const given = argumentValue(value, doc);
  return given === undefined
    ? undefined
    : typeof given === "string" || typeof given === "number"
      ? String(given)
      : no();
}

/** A Boolean argument, or undefined for none. */
function booleanArgument(value: ValueNode | undefined, doc: Doc): boolean | undefined {
  const given = argumentValue(value, doc);
  return given === undefined || typeof given === "boolean" ? given : no();
}

/**
 * Note.reactions without `after`, `first` within the reactions a note comes with (note.ts): the
 * newest `first` of them, and a next page when the note has more. `c` holds the note's counts.
 */
function reactionsSql(f: FieldNode, doc: Doc): SqlOf {
  let first: number | undefined;
  for (const argument of f.arguments ?? []) {
    if (argument.name.value !== "first") no();
    first = intArgument(argument.value, doc);
  }
  first ??= REACTIONS_SHOWN;
  if (!Number.isInteger(first) || first < 1 || first > REACTIONS_SHOWN) no();
  const limit = Prisma.raw(String(first));
  const connection = objectOf(
    f.selectionSet,
    "ReactionConnection",
    doc,
    {},
    {
      edges: (c) => {
        const edge = objectOf(
          selectionOf(c),
          "ReactionEdge",
          doc,
          { cursor: raw("r.id::text") },
          {
            node: (e) => objectOf(selectionOf(e), "Reaction", doc, reactionColumns("r")),
          },
        );
        return (env) => Prisma.sql`COALESCE(json_agg(${edge(env)} ORDER BY r.id DESC), '[]')`;
      },
      pageInfo: (c) =>
        objectOf(selectionOf(c), "PageInfo", doc, {
          hasNextPage: raw(`COALESCE(c.total, 0) > ${first}`),
          hasPreviousPage: raw("false"),
          startCursor: raw("(array_agg(r.id::text ORDER BY r.id DESC))[1]"),
          endCursor: raw("(array_agg(r.id::text ORDER BY r.id))[1]"),
        }),
    },
  );
  // Over no rows at all when the note has no reaction (most notes): their lookup is skipped.
  return (env) => Prisma.sql`(SELECT ${connection(env)} FROM (
    SELECT * FROM reactions WHERE c.total IS NOT NULL AND note_id = p.id ORDER BY id DESC LIMIT ${limit}) r)`;
}

/** Note (note.ts), its own columns, of the page's row `p` and its counts `c`. */
const NOTE: Record<string, SqlOf> = {
  id: raw("p.id::text"),
  content: raw("p.content"),
  cwComment: raw("p.cw_comment"),
  visibility: raw("p.visibility::text"),
  sendToId: raw("p.send_to_id::text"),
  renoteId: raw("p.renote_id::text"),
  replyToId: raw("p.reply_to_id::text"),
  createdAt: iso("p.created_at"),
  reactionCount: raw("COALESCE(c.total, 0)"),
};

/** Note of the page's row `p`, its author `a` and its counts `c`, and the count by emoji when selected. */
function noteSql(selection: SelectionSetNode | undefined, doc: Doc): { node: SqlOf; counts: SqlOf | undefined } {
  let counts: SqlOf | undefined;
  const node = objectOf(selection, "Note", doc, NOTE, {
    author: (f) => objectOf(selectionOf(f), "Account", doc, ACCOUNT),
    reactions: (f) => reactionsSql(f, doc),
    ownReaction: (f) => {
      const reaction = objectOf(selectionOf(f), "Reaction", doc, reactionColumns("o"));
      return (env) =>
        env.viewerId === undefined
          ? Prisma.sql`NULL::json`
          : Prisma.sql`(SELECT ${reaction(env)} FROM reactions o WHERE o.note_id = p.id AND o.account_id = ${env.viewerId})`;
    },
    attachments: (f) => {
      const file = objectOf(selectionOf(f), "DriveFile", doc, DRIVE_FILE);
      return (env) => Prisma.sql`COALESCE((SELECT json_agg(${file(env)} ORDER BY x.position)
        FROM note_attachments x JOIN drive_files f ON f.id = x.file_id WHERE x.note_id = p.id), '[]')`;
    },
    // The lateral `c` aggregates them; selected twice (aliases), the executor answers.
    reactionCounts: (f) => {
      if (counts) no();
      counts = objectOf(selectionOf(f), "ReactionCount", doc, { emoji: raw("e.emoji"), count: raw("e.total") });
      return raw("COALESCE(c.counts, '[]')");
    },
  });
  return { node, counts };
}

const ROOTS = new Set(["homeTimeline", "globalTimeline", "accountTimeline", "listTimeline"]);

/** The plan of a document for these variables, or undefined when the executor must answer it. */
export function compilePage(
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
    return compile(document, operationName, variables);
  } catch (err) {
    if (err instanceof NotCompiled) return undefined;
    throw err;
  }
}

function compile(
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
  const doc: Doc = { fragments, variables, defaults };
  const roots = fieldsOf(operation.selectionSet, "Query", doc);
  if (roots.length !== 1 || !ROOTS.has(roots[0].name.value)) no();
  const root = roots[0];
  const field = root.name.value as CompiledPage["field"];
  const query: CompiledPage["query"] = {};
  let first: number | undefined;
  let target: string | undefined;
  for (const { name, value } of root.arguments ?? []) {
    switch (name.value) {
      case "first":
        first = intArgument(value, doc);
        break;
      case "after":
        query.beforeId = stringArgument(value, doc);
        break;
      case "hasAttachment":
      case "noNsfw":
        query[name.value] = booleanArgument(value, doc);
        break;
      case "name":
        if (field !== "accountTimeline") no();
        target = stringArgument(value, doc);
        break;
      case "listId":
        if (field !== "listTimeline") no();
        target = stringArgument(value, doc);
        break;
      default:
        no();
    }
  }
  if ((field === "accountTimeline" || field === "listTimeline") && target === undefined) no();
  let node: SqlOf | undefined;
  let counts: SqlOf | undefined;
  const connection = fieldsOf(root.selectionSet, "NoteConnection", doc).map((f): Selected<ConnectionField> => {
    if (f.arguments?.length) no();
    switch (f.name.value) {
      case "__typename":
        return { key: keyOf(f), value: { kind: "typename", name: "NoteConnection" } };
      case "edges":
        return {
          key: keyOf(f),
          value: {
            kind: "edges",
            edge: fieldsOf(f.selectionSet, "NoteEdge", doc).map((e) => {
              if (e.name.value === "node") {
                if (node || e.arguments?.length) no();
                ({ node, counts } = noteSql(e.selectionSet, doc));
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
            fields: fieldsOf(f.selectionSet, "PageInfo", doc).map((p) => {
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
  return { key: keyOf(root), field, first, query, target, connection, node: node ?? raw("NULL"), counts };
}

/** A page's row: the note's id (its cursor) and its JSON. */
interface Row {
  id: bigint;
  node: string;
}

/** The statement writing each note `page` selects as the plan's JSON. */
function statement(plan: CompiledPage, env: Env, page: Prisma.Sql): Prisma.Sql {
  const byEmoji = plan.counts ? Prisma.sql`, json_agg(${plan.counts(env)}) AS counts` : Prisma.empty;
  return Prisma.sql`
    WITH page AS (${page})
    SELECT p.id, ${plan.node(env)}::text AS node
    FROM page p JOIN accounts a ON a.id = p.author_id
    LEFT JOIN LATERAL (
      SELECT sum(e.total) AS total ${byEmoji} FROM (${countsByEmoji(Prisma.sql`p.id`)}) e
    ) c ON true
    ORDER BY p.id DESC`;
}

/** The notes of the plan's timeline, through the same service its field calls. */
function timelineOf(ctx: Context, plan: CompiledPage, query: TimelineQuery): Promise<Row[]> {
  const env = { viewerId: optionalAccount(ctx)?.id, publicUrl: ctx.config.publicUrl, localHost: ctx.config.localHost };
  const load = (c: Context, page: Prisma.Sql) => queryRows<Row>(c.db, statement(plan, env, page));
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
    this.#plans.set(found.key, compilePage(found.query, found.operationName, found.variables) ?? null);
    this.#chars += found.key.length;
    // The oldest out first.
    for (const oldest of this.#plans.keys()) {
      if (this.#chars <= CACHED_DOCUMENT_CHARS) break;
      this.#plans.delete(oldest);
      this.#chars -= oldest.length;
    }
  }
}
