// Case folding for the search index, as PostgreSQL's ILIKE folds: one code point at a time, by
// its simple lowercase mapping, the same for notes and queries. JS's toLowerCase is the full,
// context-sensitive mapping (İ becomes i + U+0307, a word-final Σ becomes ς), which PostgreSQL
// never does, so whenever PostgreSQL matches, the query's grams would not all be the note's.
// Changing fold changes every note's grams: bump FOLDING_VERSION, and an instance rebuilds the
// index at start (its generation is then older).
export const FOLDING_VERSION = 1;

const folded = new Map<number, string>();

function foldCodePoint(cp: number): string {
  let to = folded.get(cp);
  if (to === undefined) {
    // The simple mapping: the first code point of the full one (only U+0130 has more than one).
    to = String.fromCodePoint(String.fromCodePoint(cp).toLowerCase().codePointAt(0) ?? cp);
    folded.set(cp, to);
  }
  return to;
}

function ascii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

export function fold(text: string): string {
  // ASCII, the common case, folds as JS folds it.
  if (ascii(text)) return text.toLowerCase();
  let out = "";
  for (const char of text) out += foldCodePoint(char.codePointAt(0) ?? 0);
  return out;
}
