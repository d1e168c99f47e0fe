// The PostgreSQL side of search: a query tree compiles to one parameterised Prisma filter
// (no SQL built from user text). Keywords and phrases are case-insensitive substring matches
// on content or cw_comment (ILIKE, served by the trigram GIN indexes), CJK included.
import type { Prisma } from "../db/client.ts";
import { PLAIN_RENOTE, QUOTE } from "../domain/notes/service.ts";
import type { SearchNode } from "./query.ts";

/** The `from:` names of a tree, to resolve to account ids in one query. */
export function fromNames(node: SearchNode): string[] {
  switch (node.kind) {
    case "or":
    case "and":
      return node.items.flatMap(fromNames);
    case "not":
      return fromNames(node.item);
    case "from":
      return [node.name];
    default:
      return [];
  }
}

/** A LIKE pattern's special characters as literals: Prisma's `contains` passes them on as they are. */
function literal(value: string): string {
  return value.replace(/[\\%_]/g, "\\$&");
}

function text(value: string): Prisma.NoteWhereInput {
  const contains = literal(value);
  return {
    OR: [{ content: { contains, mode: "insensitive" } }, { cwComment: { contains, mode: "insensitive" } }],
  };
}

/**
 * The filter of a tree. `authors` maps each `from:` name to its account id, or to nothing
 * when no such account exists (the term then matches no note).
 */
export function compileSearch(node: SearchNode, authors: Map<string, bigint | undefined>): Prisma.NoteWhereInput {
  switch (node.kind) {
    case "or":
      return { OR: node.items.map((item) => compileSearch(item, authors)) };
    case "and":
      return { AND: node.items.map((item) => compileSearch(item, authors)) };
    case "not":
      return { NOT: compileSearch(node.item, authors) };
    case "keyword":
    case "phrase":
      return text(node.text);
    case "from": {
      const id = authors.get(node.name);
      return id === undefined ? { id: { in: [] } } : { authorId: id };
    }
    case "is":
      return node.value === "renote" ? PLAIN_RENOTE : QUOTE;
    case "has":
      return node.value === "media"
        ? { attachments: { some: {} } }
        : {
            OR: [
              { content: { contains: "http://", mode: "insensitive" } },
              { content: { contains: "https://", mode: "insensitive" } },
            ],
          };
  }
}
