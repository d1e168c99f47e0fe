// Where the newest page of a common word's matches begins. The trigram indexes give no order: for
// a word in one note of 350, PostgreSQL read each of its 2,900 matches at 1M notes (5.5 of a
// search's 8 ms) to keep the newest 100. Once a search has seen where its page began, the next one
// of the same text asks the notes past that point (and a little before) first, and the older ones
// only if those fall short of a page; the primary key then narrows the trigram index's matches
// before the notes are read. A hint, per process, and only where it pays (a page out of many
// matches); the notes found are the same either way (test/search-window.test.ts).

/** How many matches past a page's worth make a window worth asking (fewer: all are read anyway). */
const WORTH = 4;
/** How long a window is trusted before the search learns it again (it follows the newest notes). */
const KEEP_MS = 60_000;
/** Query texts remembered, the least recently learned forgotten first. */
const MOST = 1_000;

const windows = new Map<string, { from: bigint; until: number }>();

/** The id from which a full page of `text`'s newest matches was last found, if known and fresh. */
export function windowOf(text: string): bigint | undefined {
  const known = windows.get(text);
  if (!known) return undefined;
  if (known.until > Date.now()) return known.from;
  windows.delete(text);
  return undefined;
}

/**
 * What a search of `text` over every note found: its page (ids, newest first) and how many notes
 * matched in all. The window spans the page's ids and a quarter as much again, so that another caller
 * (who sees fewer of them) or the notes deleted meanwhile still leave it a page.
 */
export function learnWindow(text: string, page: bigint[], take: number, matched: number): void {
  if (page.length < take || matched < WORTH * take) return;
  const [newest, oldest] = [page[0], page[page.length - 1]];
  if (windows.size >= MOST) windows.delete(windows.keys().next().value as string);
  windows.set(text, { from: oldest - (newest - oldest) / 4n, until: Date.now() + KEEP_MS });
}

/** The window did not hold a page (notes deleted, another caller's view): learn it again. */
export function forgetWindow(text: string): void {
  windows.delete(text);
}
