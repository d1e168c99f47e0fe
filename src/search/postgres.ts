// The PostgreSQL side of search: a query tree compiles to one parameterised Prisma filter
// (no SQL built from user text). Keywords and phrases are case-insensitive substring matches
// on content or cw_comment (ILIKE, served by the trigram GIN indexes), CJK included.
import { type Db, Prisma } from "../db/client.ts";
import { PLAIN_RENOTE, QUOTE } from "../domain/notes/service.ts";
import { requiredTerms, type SearchNode } from "./query.ts";

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

/** Most candidates the trigram indexes give; past it, the search goes on without them. */
export const TRIGRAM_CANDIDATES = 2000;
/**
 * What a space becomes in the phrase indexes (migration 20261124161000_phrase_trigrams): a
 * letter, so pg_trgm makes trigrams across words ("eǂs" of "note seeded"), where it makes none
 * across a space. Any character would keep the filter true; a rare letter keeps it selective.
 */
const SPACE = "ǂ";

function phraseText(column: "content" | "cw_comment"): Prisma.Sql {
  return Prisma.raw(`translate(lower(n.${column}), ' ', '${SPACE}')`);
}

/**
 * The notes that may match a query, from the trigram indexes alone, or undefined (no required
 * term of 3 characters or more, which trigrams cannot find, or more than TRIGRAM_CANDIDATES
 * notes). Asked apart, the indexes answer in a bitmap scan; inside the page's query, PostgreSQL
 * would rather walk every note newest first and try each against the text (35,000 notes read
 * for a word in 1 of 1,000, 26 ms at 300,000 notes), and pg_trgm alone splits text into words,
 * so a phrase of common words had every note rechecked. The phrase indexes also know which word
 * follows which. A note matching the query holds every required term (case-insensitively, as
 * ILIKE folds with lower), so it holds each one here too: the candidates are a superset.
 */
export async function trigramCandidates(db: Db, tree: SearchNode): Promise<bigint[] | undefined> {
  const terms = requiredTerms(tree)?.filter((term) => [...term].length >= 3);
  if (!terms?.length) return undefined;
  const holds = terms.map((term) => {
    const pattern = Prisma.sql`'%' || translate(lower(${literal(term)}), ' ', ${SPACE}) || '%'`;
    return Prisma.sql`(${phraseText("content")} LIKE ${pattern} OR ${phraseText("cw_comment")} LIKE ${pattern})`;
  });
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    SELECT n.id FROM notes n WHERE ${Prisma.join(holds, " AND ")} LIMIT ${TRIGRAM_CANDIDATES + 1}`;
  return rows.length > TRIGRAM_CANDIDATES ? undefined : rows.map((r) => r.id);
}
