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
import { LRUCache } from "lru-cache";
import { Meilisearch, MeilisearchApiError, type Settings, type Task } from "meilisearch";
import { fold } from "./fold.ts";
import { requiredTerms, type SearchNode } from "./query.ts";

export const DEFAULT_INDEX = "notes";
/** Most candidates one search takes from Meilisearch; past it, PostgreSQL answers alone. */
export const CANDIDATES = 2000;
/** Meilisearch reads the first 10 words of a query and ignores the rest. */
export const MAX_QUERY_WORDS = 10;
/** Documents per request, by their JSON's size: Meilisearch refuses requests over 100 MB. */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
export const SUPPORTED_VERSIONS = { from: [1, 18], before: [2, 0] } as const;
export const SUPPORTED_TEXT = "Meilisearch 1.18 or a later 1.x";

export interface SearchDocument {
  id: string;
  /** Milliseconds since the service epoch (the id's time), to sort and page by. */
  ms: number;
  grams: string;
}

/**
 * The completeness marker: written into the index by a rebuild (as one document no query
 * matches) and into PostgreSQL once every note reached it. The index narrows searches only while
 * both say the same generation, and it was folded the way this code folds.
 */
export interface Marker {
  generation: string;
  folding: number;
}
const MARKER_ID = "generation";
interface MarkerDocument extends SearchDocument, Marker {}

export interface IndexedNote {
  id: bigint;
  content: string;
  cwComment: string;
}

/** What the index is, as an operator needs to know it. */
export type IndexCondition =
  | { state: "unreachable" | "refused" | "unsupported"; detail: string }
  | { state: "missing" }
  | { state: "present"; marker?: Marker; wrongSettings: string[] };

export interface SearchIndex {
  readonly name: string;
  /**
   * The ids that may match, or undefined when the index cannot narrow this query: a query it
   * cannot narrow, too many hits, or an index whose marker is not `expected`.
   */
  candidates(tree: SearchNode, before: bigint | undefined, expected: Marker): Promise<bigint[] | undefined>;
  upsert(notes: IndexedNote[]): Promise<void>;
  remove(ids: bigint[]): Promise<void>;
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
  rebuild(
    batches: AsyncIterable<IndexedNote[]>,
    marker: Marker,
    onBatch?: (done: number) => void | Promise<void>,
  ): Promise<void>;
}

const SETTINGS = {
  searchableAttributes: ["grams"],
  filterableAttributes: ["ms"],
  sortableAttributes: ["ms"],
  typoTolerance: { enabled: false },
  rankingRules: ["sort", "words", "exactness"],
  // One past the candidates taken, so that a search can tell it was cut short.
  pagination: { maxTotalHits: CANDIDATES + 1 },
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
export class TaskFailed extends Error {}

/** Whether Meilisearch answered and refused the request (as against not answering at all). */
export function isRefusal(err: unknown): boolean {
  return err instanceof TaskFailed || err instanceof MeilisearchApiError;
}

async function succeeded(task: Promise<Task>): Promise<void> {
  const done = await task;
  if (done.status !== "succeeded")
    throw new TaskFailed(`meilisearch task ${done.uid} ${done.status}: ${done.error?.message}`);
}

const notFound = (err: unknown) => err instanceof MeilisearchApiError && err.cause?.code === "index_not_found";

export function createMeilisearchIndex(options: { url: string; key?: string; index?: string }): SearchIndex {
  const client = new Meilisearch({ host: options.url, apiKey: options.key, timeout: 10_000 });
  const name = options.index ?? DEFAULT_INDEX;
  const index = client.index<SearchDocument>(name);
  const wait = { timeout: 60_000, interval: 50 };
  // How many notes hold a token, for choosing the rarest: it changes slowly.
  const frequencies = new LRUCache<string, number>({ max: 50_000, ttl: 10 * 60_000 });

  async function countTokens(tokens: string[]): Promise<(token: string) => number> {
    const unknown = tokens.filter((t) => !frequencies.has(t));
    if (unknown.length) {
      const { results } = await client.multiSearch({
        queries: unknown.map((q) => ({ indexUid: name, q, limit: 0, matchingStrategy: "all" as const })),
      });
      for (const [i, token] of unknown.entries()) frequencies.set(token, results[i].estimatedTotalHits ?? 0);
    }
    return (token) => frequencies.get(token) ?? 0;
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
    async candidates(tree, before, expected) {
      const terms = requiredTerms(tree)?.map(grams);
      if (!terms) return undefined;
      const all = [...new Set(terms.flat())];
      const tokens = all.length <= MAX_QUERY_WORDS ? all : chooseGrams(terms, await countTokens(all));
      const { results } = await client.multiSearch({
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
        ],
      });
      const [hits, marker] = [results[0].hits, results[1].hits[0] as Partial<Marker> | undefined];
      if (marker?.generation !== expected.generation || marker.folding !== expected.folding) return undefined;
      // More hits than taken: the exact answer may lie beyond them.
      if (hits.length > CANDIDATES) return undefined;
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
        ({ pkgVersion: version } = await client.getVersion());
      } catch (err) {
        if (err instanceof MeilisearchApiError)
          return { state: "refused", detail: `Meilisearch refused MEILI_KEY: ${err.message}` };
        return { state: "unreachable", detail: `Meilisearch does not answer: ${(err as Error).message}` };
      }
      if (!supportedVersion(version))
        return { state: "unsupported", detail: `Meilisearch ${version} is not supported: run ${SUPPORTED_TEXT}` };
      let wrongSettings: string[];
      try {
        wrongSettings = settingsDiff(await index.getSettings());
      } catch (err) {
        if (notFound(err)) return { state: "missing" };
        throw err;
      }
      const marker = await index.getDocument<MarkerDocument>(MARKER_ID).catch((err) => {
        if (err instanceof MeilisearchApiError && err.cause?.code === "document_not_found") return undefined;
        throw err;
      });
      return {
        state: "present",
        marker: marker && { generation: marker.generation, folding: marker.folding },
        wrongSettings,
      };
    },
    async rebuild(batches, marker, onBatch) {
      const fresh = `${name}_${Date.now()}`;
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
        await succeeded(client.swapIndexes([{ indexes: [name, fresh], rename: false }]).waitTask(wait));
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
