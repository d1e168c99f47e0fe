// Where the newest page of a common word's matches begins, and then which notes they are. The
// trigram indexes give no order: for a word in one note of 350, PostgreSQL read each of its 2,900
// matches at 1M notes (5.5 of a search's 8 ms) to keep the newest 100. Once a search has seen where
// its page began, the next one of the same text asks the notes past that point (and a little
// before) first, and the older ones only if those fall short of a page; the primary key then
// narrows the trigram index's matches before the notes are read. That search also learns the
// matches themselves (`Matches`): the later ones ask those notes by id, with the notes written or
// edited since, and no trigram index at all. Hints, per process, and only where they pay (a page
// out of many matches); the notes found are the same either way (test/search-window.test.ts).

/** How many matches past a page's worth make a window worth asking (fewer: all are read anyway). */
const WORTH = 4;
/** How long a window is trusted before the search learns it again (it follows the newest notes). */
const KEEP_MS = 60_000;
/** Query texts remembered, the least recently learned forgotten first. */
const MOST = 1_000;
/** Matches remembered of a text: a page of them and half as many again. */
export const MATCHES = 150;
/**
 * How long before its learning a note's id may have been minted, or its edit begun, and its
 * commit still come after: those notes are asked again at every search (a note's statement
 * runs within a second of its id; this is a bound for a database under strain).
 */
export const SETTLING_MS = 10_000;

/**
 * The notes that matched a text when learned, newest first: every note at or past `floor` that
 * matched is among `ids`. Notes since are those with an id past `since` (minted within
 * SETTLING_MS of the learning, or later) or an edit at or after `editedSince`.
 */
export interface Matches {
  /** The ids its `from:` names resolved to when learned: the same text may name others later. */
  resolved: string;
  ids: bigint[];
  floor: bigint;
  since: bigint;
  editedSince: Date;
}

const windows = new Map<string, { from: bigint; until: number; matches?: Matches; learning?: boolean }>();

function fresh(text: string) {
  const known = windows.get(text);
  if (!known) return undefined;
  if (known.until > Date.now()) return known;
  windows.delete(text);
  return undefined;
}

/** The id from which a full page of `text`'s newest matches was last found, if known and fresh. */
export function windowOf(text: string): bigint | undefined {
  return fresh(text)?.from;
}

/** The matches learned of `text` with its names `resolved` so, if known and fresh. */
export function matchesOf(text: string, resolved: string): Matches | undefined {
  const matches = fresh(text)?.matches;
  return matches?.resolved === resolved ? matches : undefined;
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

/**
 * Whether the caller is to learn the matches of `text`'s window: once at a time, so that the
 * searches of one text that find its window together (32 connections at once) do not each learn.
 */
export function claimLearning(text: string): boolean {
  const known = fresh(text);
  if (!known || known.learning) return false;
  known.learning = true;
  return true;
}

/**
 * The end of a claimed learning of `text`'s window: its matches (or none: a later search may
 * learn them), kept as long as the window.
 */
export function learnMatches(text: string, matches: Matches | undefined): void {
  const known = windows.get(text);
  if (!known) return;
  known.learning = false;
  if (matches && known.until > Date.now()) known.matches = matches;
}

/** The matches did not hold a page: the window is asked, and learns them again. */
export function forgetMatches(text: string): void {
  const known = windows.get(text);
  if (known) known.matches = undefined;
}

/** The window did not hold a page (notes deleted, another caller's view): learn again. */
export function forgetWindow(text: string): void {
  windows.delete(text);
}
