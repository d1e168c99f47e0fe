// The Meilisearch side of search. Meilisearch matches words, the query language matches
// substrings, so the index stores each note as its character bigrams, each written as one hex
// token that Meilisearch neither splits nor normalises. A query asks for the bigrams of every
// keyword or phrase that must match (the positive terms of a top-level AND): every note that
// truly matches has them all, so the hits are a superset of the answer. PostgreSQL then applies
// the exact query and visibility to those candidates. When a query cannot be narrowed that way
// (OR at the top, terms of one character, more hits than CANDIDATES), the index steps aside and
// PostgreSQL answers alone: both backends always return the same notes.
import { Meilisearch, type Task } from "meilisearch";
import type { SearchNode } from "./query.ts";

export const DEFAULT_INDEX = "notes";
/** Most candidates one search takes from Meilisearch; past it, PostgreSQL answers alone. */
export const CANDIDATES = 2000;

export interface SearchDocument {
  id: string;
  /** Milliseconds since the service epoch (the id's time), to sort and page by. */
  ms: number;
  grams: string;
}

export interface IndexedNote {
  id: bigint;
  content: string;
  cwComment: string;
}

export interface SearchIndex {
  /** The ids that may match, or undefined when the index cannot narrow this query. */
  candidates(tree: SearchNode, before: bigint | undefined): Promise<bigint[] | undefined>;
  upsert(notes: IndexedNote[]): Promise<void>;
  remove(ids: bigint[]): Promise<void>;
  /** Applies the index settings (at start). */
  prepare(): Promise<void>;
  healthy(): Promise<boolean>;
  /** Rebuilds the index from `batches` into a fresh one, then swaps it in: searches go on meanwhile. */
  rebuild(batches: AsyncIterable<IndexedNote[]>, onBatch?: (done: number) => void): Promise<void>;
}

const SETTINGS = {
  searchableAttributes: ["grams"],
  filterableAttributes: ["ms"],
  sortableAttributes: ["ms"],
  typoTolerance: { enabled: false },
  rankingRules: ["sort", "words", "exactness"],
  // One past the candidates taken, so that a search can tell it was cut short.
  pagination: { maxTotalHits: CANDIDATES + 1 },
};

function gramToken(gram: string): string {
  return `g${Buffer.from(gram, "utf8").toString("hex")}`;
}

/** The distinct bigrams of a text, case-folded, as index tokens. */
export function grams(text: string): string[] {
  const chars = [...text.toLowerCase()];
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

/** The terms every match must contain, or undefined when the tree gives none to narrow by. */
function requiredTerms(tree: SearchNode): string[] | undefined {
  const items = tree.kind === "and" ? tree.items : [tree];
  const terms = items.flatMap((item) =>
    (item.kind === "keyword" || item.kind === "phrase") && [...item.text].length >= 2 ? [item.text] : [],
  );
  return terms.length ? terms : undefined;
}

async function succeeded(task: Promise<Task>): Promise<void> {
  const done = await task;
  if (done.status !== "succeeded")
    throw new Error(`meilisearch task ${done.uid} ${done.status}: ${done.error?.message}`);
}

export function createMeilisearchIndex(options: { url: string; key?: string; index?: string }): SearchIndex {
  const client = new Meilisearch({ host: options.url, apiKey: options.key, timeout: 10_000 });
  const INDEX = options.index ?? DEFAULT_INDEX;
  const index = client.index<SearchDocument>(INDEX);
  const wait = { timeout: 60_000, interval: 50 };
  return {
    async candidates(tree, before) {
      const terms = requiredTerms(tree);
      if (!terms) return undefined;
      const tokens = [...new Set(terms.flatMap(grams))];
      const result = await index.search(tokens.join(" "), {
        matchingStrategy: "all",
        sort: ["ms:desc"],
        limit: CANDIDATES,
        attributesToRetrieve: ["id"],
        ...(before === undefined ? {} : { filter: `ms <= ${Number(before >> 22n)}` }),
      });
      // More hits than taken: the exact answer may lie beyond them.
      if ((result.estimatedTotalHits ?? 0) > result.hits.length) return undefined;
      return result.hits.map((hit) => BigInt(hit.id));
    },
    async upsert(notes) {
      if (notes.length)
        await succeeded(index.addDocuments(notes.map(searchDocument), { primaryKey: "id" }).waitTask(wait));
    },
    async remove(ids) {
      if (ids.length) await succeeded(index.deleteDocuments(ids.map(String)).waitTask(wait));
    },
    async prepare() {
      await succeeded(client.createIndex(INDEX, { primaryKey: "id" }).waitTask(wait)).catch(() => {});
      await succeeded(index.updateSettings(SETTINGS).waitTask(wait));
    },
    async healthy() {
      return (await client.health().catch(() => ({ status: "down" }))).status === "available";
    },
    async rebuild(batches, onBatch) {
      const fresh = `${INDEX}_${Date.now()}`;
      await succeeded(client.createIndex(fresh, { primaryKey: "id" }).waitTask(wait));
      const target = client.index<SearchDocument>(fresh);
      await succeeded(target.updateSettings(SETTINGS).waitTask(wait));
      let done = 0;
      for await (const batch of batches) {
        await succeeded(target.addDocuments(batch.map(searchDocument)).waitTask({ ...wait, timeout: 600_000 }));
        done += batch.length;
        onBatch?.(done);
      }
      await succeeded(client.createIndex(INDEX, { primaryKey: "id" }).waitTask(wait)).catch(() => {});
      await succeeded(client.swapIndexes([{ indexes: [INDEX, fresh], rename: false }]).waitTask(wait));
      await succeeded(client.deleteIndex(fresh).waitTask(wait));
    },
  };
}
