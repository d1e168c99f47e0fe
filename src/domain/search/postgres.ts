// The PostgreSQL side of search: a query tree compiles to one parameterised condition, as SQL
// for the page's statement and as the Prisma filter it is held equal to (test/search-sql.test.ts);
// no SQL is built from user text. Keywords and phrases are case-insensitive substring matches on
// content or cw_comment (ILIKE, served by the trigram GIN indexes), CJK included.
import { type Db, Prisma } from "../../db/client.ts";
import { PLAIN_RENOTE, QUOTE } from "../notes/service.ts";
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

/**
 * compileSearch as SQL on notes `n`, for a page selected and built in one statement (the Prisma
 * filter's page took 22 ms for a common word at 300,000 notes: joins of every match to its
 * author, then five queries to build 100 notes; this one, 11.6 ms). Every part is a boolean
 * that is never NULL (content and cw_comment are NOT NULL), so NOT means what it says.
 */
export function compileSearchSql(
  node: SearchNode,
  authors: Map<string, bigint | undefined>,
  /**
   * False: each pattern a sub-select's value, which the planner does not see, matched against
   * `content || ''`. It then neither reads content's statistics to estimate it (~1 ms a
   * statement) nor scans the trigram indexes, which a sub-select's value on the column itself
   * still let it do as the statement ran, ANDing their bitmap with the other conditions' (half of
   * a remembered search's statement, bench/README.md): for a statement whose notes other
   * conditions find.
   */
  planned = true,
): Prisma.Sql {
  switch (node.kind) {
    case "or":
      return Prisma.sql`(${Prisma.join(
        node.items.map((item) => compileSearchSql(item, authors, planned)),
        " OR ",
      )})`;
    case "and":
      return Prisma.sql`(${Prisma.join(
        node.items.map((item) => compileSearchSql(item, authors, planned)),
        " AND ",
      )})`;
    case "not":
      return Prisma.sql`NOT ${compileSearchSql(node.item, authors, planned)}`;
    case "keyword":
    case "phrase": {
      const text = `%${literal(node.text)}%`;
      if (planned) return Prisma.sql`(n.content ILIKE ${text} OR n.cw_comment ILIKE ${text})`;
      const pattern = Prisma.sql`(SELECT ${text}::text)`;
      return Prisma.sql`((n.content || '') ILIKE ${pattern} OR (n.cw_comment || '') ILIKE ${pattern})`;
    }
    case "from": {
      const id = authors.get(node.name);
      return id === undefined ? Prisma.sql`false` : Prisma.sql`n.author_id = ${id}`;
    }
    case "is":
      return node.value === "renote"
        ? Prisma.sql`(n.renote_id IS NOT NULL AND ${PLAIN_SQL})`
        : Prisma.sql`(n.renote_id IS NOT NULL AND NOT ${PLAIN_SQL})`;
    case "has":
      return node.value === "media"
        ? Prisma.sql`EXISTS (SELECT 1 FROM note_attachments x WHERE x.note_id = n.id)`
        : Prisma.sql`(n.content ILIKE '%http://%' OR n.content ILIKE '%https://%')`;
  }
}

/** A renote is plain with no content and nothing attached (PLAIN_RENOTE). */
const PLAIN_SQL = Prisma.sql`(n.content = '' AND NOT EXISTS (SELECT 1 FROM note_attachments x WHERE x.note_id = n.id))`;

/** Most candidates the phrase indexes give; past it, the search goes on without them. */
export const PHRASE_CANDIDATES = 2000;
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
 * The notes that may match a query with a phrase of several words, from the phrase indexes
 * alone, or undefined (no such phrase, or more than PHRASE_CANDIDATES notes). pg_trgm splits
 * text into words, so the plain indexes find every note holding each word of "note seeded" and
 * PostgreSQL rechecks them all, however few hold the phrase (every note, for a phrase of common
 * words); the phrase indexes also know which word follows which. A note matching the query holds
 * every required term (case-insensitively, as ILIKE folds with lower), so it holds each one here
 * too: the candidates are a superset. Queries of single words are left to the page's query: at
 * 1M notes, asking first made a word in 1 of 1,000 notes slower (27 to 56 ms), the page then
 * carrying a thousand ids.
 */
export async function phraseCandidates(db: Db, tree: SearchNode): Promise<bigint[] | undefined> {
  const terms = requiredTerms(tree);
  if (!terms?.some((term) => /\s/u.test(term.trim()))) return undefined;
  const holds = terms.map((term) => {
    const pattern = Prisma.sql`'%' || translate(lower(${literal(term)}), ' ', ${SPACE}) || '%'`;
    return Prisma.sql`(${phraseText("content")} LIKE ${pattern} OR ${phraseText("cw_comment")} LIKE ${pattern})`;
  });
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    SELECT n.id FROM notes n WHERE ${Prisma.join(holds, " AND ")} LIMIT ${PHRASE_CANDIDATES + 1}`;
  return rows.length > PHRASE_CANDIDATES ? undefined : rows.map((r) => r.id);
}
