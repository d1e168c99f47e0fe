// Case folding for the search index, as PostgreSQL's ILIKE folds: ILIKE compares lower() of
// both sides, and lower() maps each code point by itself to one code point (its simple
// lowercase mapping), so fold does the same, for notes and queries alike. Then whenever
// PostgreSQL finds a query in a note, the folded query is a substring of the folded note and
// its bigrams are all the note's. test/search-fold.test.ts holds fold equal to lower() on every
// code point of the database the tests run on.
//
// Changing fold changes every note's grams: bump FOLDING_VERSION, and an instance rebuilds the
// index at start (the index's generation is then older). 2: the code points of EXCEPTIONS.
export const FOLDING_VERSION = 2;

// Where fold is not what String.prototype.toLowerCase makes of a text:
// - İ (U+0130): toLowerCase gives its full mapping, i + U+0307; lower() its simple one, i.
// - Σ (U+03A3): toLowerCase gives ς at the end of a word (the only context rule it applies; the
//   others in SpecialCasing.txt are Lithuanian and Turkish); lower() always σ.
// - Node's ICU knows a newer Unicode than PostgreSQL: measured on Node 20.20 (ICU 78.2,
//   Unicode 17) against PostgreSQL 18.4 (builtin C.UTF-8, Unicode 16), toLowerCase lowers 28
//   letters new in Unicode 17 that lower() leaves as they are. Folding them anyway would only
//   add candidates, but it would make the grams depend on the Node version that indexed a note,
//   so they fold as PostgreSQL folds them. When PostgreSQL's Unicode moves, the test says which.
const EXCEPTIONS = new Map<string, string>([
  ["\u0130", "i"],
  ["\u03a3", "\u03c3"],
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
  // Away from the exceptions, toLowerCase is lower(), one code point at a time, and native.
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
