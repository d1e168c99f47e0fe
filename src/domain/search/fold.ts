// Case folding for the search index, so that it never misses what PostgreSQL's ILIKE finds.
// ILIKE compares lower() of both sides, and which lower() depends on the database: the builtin
// C.UTF-8 locale and libc locales map each code point by itself to one (its simple lowercase
// mapping); ICU and the builtin PG_UNICODE_FAST map fully (İ to i + U+0307, Σ to ς at the end of
// a word). fold is one code point at a time, and fold(x) = fold(lower(x)) under all of them: then
// whenever lower(note) holds lower(query), fold(note) holds fold(query) (fold keeps substrings),
// and the query's bigrams are all the note's. So fold takes the simple mapping, and makes ς and σ
// one letter and drops U+0307, the two places where the full mapping differs. A database whose
// lower() is another (a Turkish or Lithuanian ICU locale, a libc whose Unicode disagrees) is
// found at start by databaseFolding, and its index is not used. test/search-fold.test.ts holds
// fold to this on every code point of the database the tests run on, and of a PG_UNICODE_FAST one.
//
// Changing fold changes every note's grams: bump FOLDING_VERSION, and an instance rebuilds the
// index at start (the index's generation is then older). 2: the code points of EXCEPTIONS.
// 3: ς folds to σ and U+0307 to nothing.
import type { Db } from "../../db/client.ts";

export const FOLDING_VERSION = 3;

// Where fold is not what String.prototype.toLowerCase makes of a text:
// - İ (U+0130): toLowerCase gives its full mapping, i + U+0307; fold i (and drops U+0307).
// - Σ (U+03A3): toLowerCase gives ς at the end of a word (the only context rule it applies; the
//   others in SpecialCasing.txt are Lithuanian and Turkish); fold always σ, and ς too.
// - Node's ICU knows a newer Unicode than PostgreSQL: measured on Node 20.20 (ICU 78.2,
//   Unicode 17) against PostgreSQL 18.4 (builtin C.UTF-8, Unicode 16), toLowerCase lowers 28
//   letters new in Unicode 17 that lower() leaves as they are. Folding them anyway would only
//   add candidates, but it would make the grams depend on the Node version that indexed a note,
//   so they fold as PostgreSQL folds them. When PostgreSQL's Unicode moves, the test says which.
const EXCEPTIONS = new Map<string, string>([
  ["\u0130", "i"],
  ["\u03a3", "\u03c3"],
  ["\u03c2", "\u03c3"],
  ["\u0307", ""],
  ...[0xa7ce, 0xa7d2, 0xa7d4, ...range(0x16ea0, 0x16eb8)].map((cp): [string, string] => {
    const char = String.fromCodePoint(cp);
    return [char, char];
  }),
]);

const EXCEPTION = new RegExp(`[${[...EXCEPTIONS.keys()].join("")}]`, "gu");

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

export function fold(text: string): string {
  // Away from the exceptions, toLowerCase is the simple mapping, one code point at a time, and native.
  EXCEPTION.lastIndex = 0;
  let match = EXCEPTION.exec(text);
  if (match === null) return text.toLowerCase();
  let out = "";
  let from = 0;
  do {
    out += text.slice(from, match.index).toLowerCase() + EXCEPTIONS.get(match[0]);
    from = EXCEPTION.lastIndex;
    match = EXCEPTION.exec(text);
  } while (match !== null);
  return out + text.slice(from).toLowerCase();
}

/**
 * Texts whose lower() depends on what surrounds a letter: final sigma, and the Turkish and
 * Lithuanian rules of SpecialCasing.txt (I, İ and J before combining marks).
 */
const IN_CONTEXT = ["ΟΔΟΣ", "ΟΔΟΣ ΟΔΟΣ.", "ΑΣ·Α", "ΣΑ", "Iİ", "I\u0307", "I\u0300", "J\u0301", "Į\u0301", "İ\u0307x"];

/**
 * Undefined when fold agrees with the database's lower() (fold(x) = fold(lower(x)) for every code
 * point and for IN_CONTEXT, the notes' text columns using the database's collation); otherwise
 * why the index cannot be used. Asks the database once: every code point but NUL and the
 * surrogates through lower(), about a second of the database's time.
 */
export async function foldingDisagrees(db: Db): Promise<string | undefined> {
  const [changed, probes, columns] = await Promise.all([
    db.$queryRaw<{ i: number; lowered: string }[]>`
      SELECT i, lower(chr(i)) AS lowered FROM generate_series(1, 1114111) i
      WHERE (i < 55296 OR i > 57343) AND lower(chr(i)) <> chr(i)`,
    db.$queryRaw<{ text: string; lowered: string }[]>`
      SELECT t AS text, lower(t) AS lowered FROM unnest(${IN_CONTEXT}::text[]) t`,
    db.$queryRaw<{ name: string; collation: string }[]>`
      SELECT a.attname AS name, c.collname AS collation FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
      WHERE a.attrelid = to_regclass('notes') AND a.attname IN ('content', 'cw_comment') AND c.collname <> 'default'`,
  ]);
  if (columns.length)
    return `notes.${columns[0].name} has collation ${columns[0].collation}, not the database's: its ILIKE is not the lower() checked`;
  const wrong = [...changed.map(({ i, lowered }) => ({ text: String.fromCodePoint(i), lowered })), ...probes].filter(
    ({ text, lowered }) => fold(text) !== fold(lowered),
  );
  if (wrong.length === 0) return undefined;
  const shown = wrong
    .slice(0, 3)
    .map(({ text, lowered }) => `lower(${JSON.stringify(text)}) = ${JSON.stringify(lowered)}`)
    .join(", ");
  return `the database's lower() folds ${wrong.length} texts otherwise than Murmur's index (${shown}): its locale (LC_CTYPE, or the ICU or builtin locale) is not one the index supports; use C.UTF-8, PG_UNICODE_FAST, a non-Turkic ICU or libc UTF-8 locale, or unset MEILI_URL`;
}

const checked = new WeakMap<Db, Promise<string | undefined>>();

/** foldingDisagrees, asked once per database client (again after a failure to ask). */
export function databaseFolding(db: Db): Promise<string | undefined> {
  let found = checked.get(db);
  if (!found) {
    found = foldingDisagrees(db);
    checked.set(db, found);
    found.catch(() => checked.delete(db));
  }
  return found;
}
