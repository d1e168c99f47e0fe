// The Meilisearch side of search. Meilisearch matches words, the query language matches
// substrings, so the index stores each note as its character bigrams, each written as one hex
// token that Meilisearch neither splits nor normalises. A query asks for bigrams of every
// keyword or phrase that must match (the positive terms of a top-level AND): every note that
// truly matches has them all, so the hits are a superset of the answer. PostgreSQL then applies
// the exact query and visibility to those candidates. When a query cannot be narrowed that way
// (OR at the top, terms of one character, more hits than CANDIDATES, an index that is not
// complete), the index steps aside and PostgreSQL answers alone: both backends always return
// the same notes.
//
// Supported: Meilisearch 1.18 and later 1.x (swapIndexes' `rename` first appears in 1.18; the
// versions meilisearch-js 0.62 is tested against). The version is checked by prepare().
import { ConsecutiveBreaker, circuitBreaker, handleWhen, type IDisposable } from "cockatiel";
import { LRUCache } from "lru-cache";
import { Meilisearch, MeilisearchApiError, type Settings, type Task } from "meilisearch";
import { fold } from "../domain/search/fold.ts";
import type { Marker, SearchNarrowing } from "../domain/search/narrowing.ts";
import { requiredTerms } from "../domain/search/query.ts";

export const DEFAULT_INDEX = "notes";
/** Most candidates one search takes from Meilisearch; past it, PostgreSQL answers alone. */
export const CANDIDATES = 2000;
/** Meilisearch reads the first 10 words of a query and ignores the rest. */
export const MAX_QUERY_WORDS = 10;
/** Documents per request, by their JSON's size: Meilisearch refuses requests over 100 MB. */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
export const SUPPORTED_VERSIONS = { from: [1, 18], before: [2, 0] } as const;
export const SUPPORTED_TEXT = "Meilisearch 1.18 or a later 1.x";
/** How long a search waits for Meilisearch; past it PostgreSQL answers alone. */
export const SEARCH_TIMEOUT_MS = 400;
/** How long the index's check (every minute, and each GET /readyz) waits for Meilisearch. */
export const CHECK_TIMEOUT_MS = 2000;
/**
 * Searches that Meilisearch failed in a row before none asks it (the circuit opens), and how long
 * until one search probes it again: while open, a Meilisearch that hangs costs searches nothing.
 */
export const BREAK_AFTER = 3;
export const HALF_OPEN_AFTER_MS = 10_000;
/** Most grams one search counts (in one request) to choose the rarest, however long its terms. */
export const MAX_COUNTED = 32;

export interface SearchDocument {
  id: string;
  /** Milliseconds since the service epoch (the id's time), to sort and page by. */
  ms: number;
  grams: string;
}

/** The marker as the index holds it: also the outbox position last written (src/search/worker.ts). */
export interface IndexMarker extends Marker {
  position?: number;
}
const MARKER_ID = "generation";
interface MarkerDocument extends SearchDocument, IndexMarker {}

export interface IndexedNote {
  id: bigint;
  content: string;
  cwComment: string;
}

/** What the index is, as an operator needs to know it. */
export type IndexCondition =
  | { state: "unreachable" | "refused" | "unsupported"; detail: string }
  | { state: "missing" }
  | { state: "present"; marker?: IndexMarker; wrongSettings: string[] };

/** The index as its worker, its rebuild and an operator use it: besides what searches ask of it. */
export interface SearchIndex extends SearchNarrowing {
  upsert(notes: IndexedNote[]): Promise<void>;
  remove(ids: bigint[]): Promise<void>;
  /**
   * Enqueues writing `position` into the marker (its other fields kept); resolves once
   * Meilisearch accepted the task, with a wait for the task to succeed.
   */
  markPosition(position: number): Promise<() => Promise<void>>;
  /** Deletes an index (a killed rebuild's fresh one) if it exists. */
  dropIndex(uid: string): Promise<void>;
  /**
   * Checks the server's version and key, creates the index when missing and applies its
   * settings, then reads them back; throws unless all hold. The worker drains only after it.
   */
  prepare(): Promise<void>;
  condition(): Promise<IndexCondition>;
  /**
   * Rebuilds the index from `batches` into a fresh one carrying `marker`, then swaps it in:
   * searches go on meanwhile. The fresh index is deleted whether or not the rebuild succeeds.
   */
  rebuild(batches: AsyncIterable<IndexedNote[]>, marker: Marker, hooks?: RebuildHooks): Promise<void>;
}

export interface RebuildHooks {
  /** Told the fresh index's name before it is made (so that a killed rebuild's can be deleted). */
  fresh?: (uid: string) => Promise<void>;
  /** Called after each batch reached the fresh index. */
  onBatch?: (done: number) => void | Promise<void>;
  /** Called right before the swap; throwing stops the rebuild before it. */
  beforeSwap?: () => Promise<void>;
}

/** How long a swap may wait behind the tasks queued before it (batches of the workers). */
const SWAP_WAIT_MS = 600_000;

const SETTINGS = {
  searchableAttributes: ["grams"],
  filterableAttributes: ["ms"],
  sortableAttributes: ["ms"],
  typoTolerance: { enabled: false },
  rankingRules: ["sort", "words", "exactness"],
  // One past the candidates taken, so that a search can tell it was cut short.
  pagination: { maxTotalHits: CANDIDATES + 1 },
  // Each of these, set otherwise, makes a search's hits miss notes that hold every gram asked:
  // a distinct attribute keeps one note of many (of one millisecond, on `ms`), hidden attributes
  // leave the ids out, and stop words, separators, a dictionary or a locale split or drop grams.
  // (Synonyms, prefix search and searchCutoffMs only add hits: with every term required, a search
  // cut short still returns each note matching them all, crates/milli/src/search/new/bucket_sort.rs.)
  distinctAttribute: null,
  displayedAttributes: ["*"],
  stopWords: [],
  separatorTokens: [],
  nonSeparatorTokens: [],
  dictionary: [],
  localizedAttributes: null,
} satisfies Settings;

/** The settings that differ from SETTINGS, by name (empty when the index is as wanted). */
export function settingsDiff(actual: Settings): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const sorted = (list: unknown) => (Array.isArray(list) ? list.map((v) => JSON.stringify(v)).sort() : list);
  const wrong: string[] = [];
  for (const name of ["searchableAttributes", "rankingRules"] as const)
    if (!same(actual[name], SETTINGS[name])) wrong.push(name);
  for (const name of ["filterableAttributes", "sortableAttributes"] as const)
    if (!same(sorted(actual[name]), sorted(SETTINGS[name]))) wrong.push(name);
  if (actual.typoTolerance?.enabled !== false) wrong.push("typoTolerance");
  if (actual.pagination?.maxTotalHits !== SETTINGS.pagination.maxTotalHits) wrong.push("pagination");
  if (actual.distinctAttribute != null) wrong.push("distinctAttribute");
  if (!same(actual.displayedAttributes ?? ["*"], SETTINGS.displayedAttributes)) wrong.push("displayedAttributes");
  for (const name of [
    "stopWords",
    "separatorTokens",
    "nonSeparatorTokens",
    "dictionary",
    "localizedAttributes",
  ] as const)
    if (actual[name]?.length) wrong.push(name);
  return wrong;
}

/** Whether a version string ("1.18.2", "1.19.0-rc.1") is one this code supports. */
export function supportedVersion(version: string): boolean {
  const [major, minor] = version.split(/[.-]/).map(Number);
  const at = (v: readonly number[]) => major > v[0] || (major === v[0] && minor >= v[1]);
  return (
    Number.isInteger(major) && Number.isInteger(minor) && at(SUPPORTED_VERSIONS.from) && !at(SUPPORTED_VERSIONS.before)
  );
}

function gramToken(gram: string): string {
  return `g${Buffer.from(gram, "utf8").toString("hex")}`;
}

/** The distinct bigrams of a text, case-folded as PostgreSQL's ILIKE folds, as index tokens. */
export function grams(text: string): string[] {
  const chars = [...fold(text)];
  const tokens = new Set<string>();
  for (let i = 0; i + 1 < chars.length; i++) tokens.add(gramToken(chars[i] + chars[i + 1]));
  return [...tokens];
}

export function searchDocument(note: IndexedNote): SearchDocument {
  return {
    id: note.id.toString(),
    ms: Number(note.id >> 22n),
    grams: [...new Set([...grams(note.content), ...grams(note.cwComment)])].join(" "),
  };
}

/**
 * At most `max` tokens to ask for, chosen so they narrow most: the rarest of each term first
 * (the rarest terms' when there are more terms than words), then the rarest of the rest. Any
 * subset of a match's grams still finds every match, so the choice only decides how few
 * candidates come back, never which matches.
 */
export function chooseGrams(terms: string[][], count: (token: string) => number, max = MAX_QUERY_WORDS): string[] {
  const rarest = (tokens: string[]) => [...tokens].sort((a, b) => count(a) - count(b) || (a < b ? -1 : 1));
  const chosen = new Set(rarest(terms.filter((t) => t.length).map((t) => rarest(t)[0])).slice(0, max));
  for (const token of rarest([...new Set(terms.flat())])) {
    if (chosen.size >= max) break;
    chosen.add(token);
  }
  return [...chosen];
}

/**
 * The grams to count for chooseGrams, at most `max`: every term's in turn, spread along each term
 * (a term's rarest gram is as likely anywhere in it). Grams left uncounted are never preferred.
 */
export function gramsToCount(terms: string[][], max = MAX_COUNTED): string[] {
  const spread = terms.map((term) => {
    const take = Math.min(term.length, max);
    return Array.from({ length: take }, (_, i) => term[Math.floor((i * term.length) / take)]);
  });
  const chosen = new Set<string>();
  for (let round = 0; chosen.size < max && spread.some((term) => round < term.length); round++)
    for (const term of spread) if (round < term.length && chosen.size < max) chosen.add(term[round]);
  return [...chosen];
}

/** Whether Meilisearch failed to answer (as against refusing a request with a 4xx). */
export function unanswered(err: unknown): boolean {
  return !(err instanceof MeilisearchApiError) || err.response.status >= 500;
}

/** Documents in requests of at most `maxBytes` of JSON each (a larger document goes alone). */
export function bySize<T>(documents: T[], maxBytes = MAX_REQUEST_BYTES): T[][] {
  const requests: T[][] = [];
  let current: T[] = [];
  let bytes = 2;
  for (const document of documents) {
    const size = Buffer.byteLength(JSON.stringify(document)) + 1;
    if (current.length && bytes + size > maxBytes) {
      requests.push(current);
      current = [];
      bytes = 2;
    }
    current.push(document);
    bytes += size;
  }
  if (current.length) requests.push(current);
  return requests;
}

/** A task Meilisearch accepted, then failed: the request itself was refused. */
export class TaskFailed extends Error {
  constructor(
    message: string,
    /** Meilisearch's error of the task (its code and type), when it says one. */
    readonly error?: { code?: string; type?: string } | null,
  ) {
    super(message);
  }
}

/**
 * The errors by which Meilisearch refuses a document itself (crates/meilisearch-types/src/error.rs,
 * each of type invalid_request): sent again, the same document is refused again.
 */
const DOCUMENT_REFUSALS = new Set([
  "invalid_document_id",
  "missing_document_id",
  "invalid_document_fields",
  "invalid_document_geo_field",
  "invalid_vectors_type",
  "max_fields_limit_exceeded",
]);

/**
 * Whether Meilisearch refused a document of the request, so that the row holding it may be
 * set aside. Anything else is an outage, never the rows' fault: a key rotated (401/403 auth), a
 * full disk (no_space_left_on_device, database_size_limit_reached), io_error, internal (5xx), an
 * index deleted behind Murmur's back, a timeout, no connection.
 */
export function refusesDocument(err: unknown): boolean {
  const error = err instanceof TaskFailed ? err.error : err instanceof MeilisearchApiError ? err.cause : undefined;
  return error?.type === "invalid_request" && error.code !== undefined && DOCUMENT_REFUSALS.has(error.code);
}

async function succeeded(task: Promise<Task>): Promise<void> {
  const done = await task;
  if (done.status !== "succeeded")
    throw new TaskFailed(`meilisearch task ${done.uid} ${done.status}: ${done.error?.message}`, done.error);
}

const notFound = (err: unknown) => err instanceof MeilisearchApiError && err.cause?.code === "index_not_found";

export function createMeilisearchIndex(options: {
  url: string;
  key?: string;
  index?: string;
  /** HALF_OPEN_AFTER_MS unless told (tests). */
  halfOpenAfterMs?: number;
}): SearchIndex {
  const client = new Meilisearch({ host: options.url, apiKey: options.key, timeout: 10_000 });
  const name = options.index ?? DEFAULT_INDEX;
  const index = client.index<SearchDocument>(name);
  const wait = { timeout: 60_000, interval: 50 };
  // Searches and checks have clients of their own: a Meilisearch that hangs holds a search
  // SEARCH_TIMEOUT_MS, not the writes' 10 s (meilisearch-js aborts the request, body included).
  const reader = new Meilisearch({ host: options.url, apiKey: options.key, timeout: SEARCH_TIMEOUT_MS });
  const checker = new Meilisearch({ host: options.url, apiKey: options.key, timeout: CHECK_TIMEOUT_MS });
  // Fed by searches (BREAK_AFTER failures in a row open it; after HALF_OPEN_AFTER_MS one search
  // probes) and by the check, which holds it open from a Meilisearch that did not answer it until
  // one that does. Refusals (4xx) are answers: they never open it.
  const breaker = circuitBreaker(handleWhen(unanswered), {
    halfOpenAfter: options.halfOpenAfterMs ?? HALF_OPEN_AFTER_MS,
    breaker: new ConsecutiveBreaker(BREAK_AFTER),
  });
  let heldOpen: IDisposable | undefined;
  // How many notes hold a token, for choosing the rarest: it changes slowly.
  const frequencies = new LRUCache<string, number>({ max: 50_000, ttl: 10 * 60_000 });

  /** How many notes hold each gram of gramsToCount, in one request of at most MAX_COUNTED searches. */
  async function countTokens(terms: string[][]): Promise<(token: string) => number> {
    const unknown = gramsToCount(terms).filter((t) => !frequencies.has(t));
    if (unknown.length) {
      const { results } = await reader.multiSearch({
        queries: unknown.map((q) => ({ indexUid: name, q, limit: 0, matchingStrategy: "all" as const })),
      });
      for (const [i, token] of unknown.entries()) frequencies.set(token, results[i].estimatedTotalHits ?? 0);
    }
    return (token) => frequencies.get(token) ?? Number.MAX_SAFE_INTEGER;
  }

  async function ensureIndex(): Promise<void> {
    try {
      await client.getRawIndex(name);
    } catch (err) {
      if (!notFound(err)) throw err;
      await succeeded(client.createIndex(name, { primaryKey: "id" }).waitTask(wait));
    }
  }

  async function send(target: typeof index, documents: SearchDocument[]): Promise<void> {
    for (const request of bySize(documents))
      await succeeded(target.addDocuments(request, { primaryKey: "id" }).waitTask({ ...wait, timeout: 600_000 }));
  }

  return {
    name,
    async candidates(tree, before, expected, said = () => {}) {
      const terms = requiredTerms(tree)
        ?.map(grams)
        .filter((term) => term.length);
      if (!terms?.length) return undefined;
      const all = [...new Set(terms.flat())];
      const ask = async () => {
        const tokens = all.length <= MAX_QUERY_WORDS ? all : chooseGrams(terms, await countTokens(terms));
        // The settings are read beside the search: changed behind Murmur's back, they are seen
        // by the next search, not by the next minute's check.
        return Promise.all([
          reader.multiSearch({
            queries: [
              {
                indexUid: name,
                q: tokens.join(" "),
                matchingStrategy: "all",
                sort: ["ms:desc"],
                limit: CANDIDATES + 1,
                attributesToRetrieve: ["id"],
                ...(before === undefined ? {} : { filter: `ms <= ${Number(before >> 22n)}` }),
              },
              { indexUid: name, q: "", filter: "ms < 0", limit: 1, attributesToRetrieve: ["generation", "folding"] },
              // Meilisearch answers `offset` as it applied it, capped at maxTotalHits, which caps
              // `limit` and estimatedTotalHits alike (crates/meilisearch/src/search/mod.rs): so this
              // answer says, in the same request, whether the search could return CANDIDATES + 1.
              { indexUid: name, q: "", filter: "ms < 0", offset: CANDIDATES + 1, limit: 0 },
            ],
          }),
          reader.index(name).getSettings(),
        ]);
      };
      const [{ results }, settings] = await breaker.execute(ask);
      const [found, marker, cap] = [results[0], results[1].hits[0] as Partial<Marker> | undefined, results[2]];
      const hits = found.hits;
      const capped =
        cap.offset !== CANDIDATES + 1 ||
        (hits.length <= CANDIDATES && (found.estimatedTotalHits ?? hits.length) > hits.length);
      if (
        marker?.generation !== expected.generation ||
        marker.folding !== expected.folding ||
        capped ||
        settingsDiff(settings).length
      ) {
        said("unusable");
        return undefined;
      }
      // More hits than taken: the exact answer may lie beyond them.
      if (hits.length > CANDIDATES) {
        said("too_many");
        return undefined;
      }
      said("narrowed");
      return hits.map((hit) => BigInt(hit.id as string));
    },
    async upsert(notes) {
      if (notes.length) await send(index, notes.map(searchDocument));
    },
    async remove(ids) {
      if (ids.length) await succeeded(index.deleteDocuments(ids.map(String)).waitTask(wait));
    },
    async prepare() {
      const { pkgVersion } = await client.getVersion();
      if (!supportedVersion(pkgVersion))
        throw new Error(`Meilisearch ${pkgVersion} is not supported: run ${SUPPORTED_TEXT}`);
      await ensureIndex();
      await succeeded(index.updateSettings(SETTINGS).waitTask(wait));
      const wrong = settingsDiff(await index.getSettings());
      if (wrong.length)
        throw new Error(`Meilisearch index ${name} kept other settings than asked: ${wrong.join(", ")}`);
    },
    async condition() {
      let version: string;
      try {
        ({ pkgVersion: version } = await checker.getVersion());
      } catch (err) {
        if (!unanswered(err))
          return { state: "refused", detail: `Meilisearch refused MEILI_KEY: ${(err as Error).message}` };
        heldOpen ??= breaker.isolate();
        return { state: "unreachable", detail: `Meilisearch does not answer: ${(err as Error).message}` };
      }
      heldOpen?.dispose();
      heldOpen = undefined;
      if (!supportedVersion(version))
        return { state: "unsupported", detail: `Meilisearch ${version} is not supported: run ${SUPPORTED_TEXT}` };
      let wrongSettings: string[];
      try {
        wrongSettings = settingsDiff(await checker.index(name).getSettings());
      } catch (err) {
        if (notFound(err)) return { state: "missing" };
        throw err;
      }
      const marker = await checker
        .index<MarkerDocument>(name)
        .getDocument(MARKER_ID)
        .catch((err) => {
          if (err instanceof MeilisearchApiError && err.cause?.code === "document_not_found") return undefined;
          throw err;
        });
      return {
        state: "present",
        marker: marker && { generation: marker.generation, folding: marker.folding, position: marker.position },
        wrongSettings,
      };
    },
    async markPosition(position) {
      const task = await index.updateDocuments([{ id: MARKER_ID, position } as Partial<SearchDocument>]);
      return () => succeeded(client.tasks.waitForTask(task.taskUid, wait));
    },
    async dropIndex(uid) {
      try {
        await succeeded(client.deleteIndex(uid).waitTask(wait));
      } catch (err) {
        if (!(err instanceof TaskFailed && err.error?.code === "index_not_found") && !notFound(err)) throw err;
      }
    },
    async rebuild(batches, marker, { fresh: told, onBatch, beforeSwap } = {}) {
      const fresh = `${name}_${Date.now()}`;
      await told?.(fresh);
      try {
        await succeeded(client.createIndex(fresh, { primaryKey: "id" }).waitTask(wait));
        const target = client.index<SearchDocument>(fresh);
        await succeeded(target.updateSettings(SETTINGS).waitTask(wait));
        let done = 0;
        for await (const batch of batches) {
          await send(target, batch.map(searchDocument));
          done += batch.length;
          await onBatch?.(done);
        }
        const markerDocument: MarkerDocument = { id: MARKER_ID, ms: -1, grams: "", ...marker };
        await send(target, [markerDocument]);
        await ensureIndex();
        await beforeSwap?.();
        await succeeded(
          client.swapIndexes([{ indexes: [name, fresh], rename: false }]).waitTask({ ...wait, timeout: SWAP_WAIT_MS }),
        );
      } finally {
        // After the swap this is the old index; after a failure, the partial copy.
        await client
          .deleteIndex(fresh)
          .waitTask(wait)
          .catch(() => {});
      }
    },
  };
}
