// Yoga's parse caches, bounded by the text they hold. Its defaults keep 1,024 documents and
// 1,024 parse errors for an hour, keyed by their whole text: 600 distinct requests of 1 MB
// (within the body limit, each refused or answered in milliseconds) pinned 600 MB of RSS that
// way, past every bound the requests themselves were held to.
import type { DocumentNode } from "graphql";

/** The characters of document text the cache holds at most, all documents together. */
export const CACHED_DOCUMENT_CHARS = 2_000_000;
/** A document longer than this is parsed each time it comes, never kept. */
export const CACHED_DOCUMENT_MAX = 20_000;

/** Least recently used documents first out, once their text passes `maxChars` in all. */
export class DocumentCache {
  private readonly entries = new Map<string, DocumentNode>();
  private chars = 0;

  constructor(
    private readonly maxChars = CACHED_DOCUMENT_CHARS,
    private readonly maxEntry = CACHED_DOCUMENT_MAX,
  ) {}

  get(key: string): DocumentNode | undefined {
    const document = this.entries.get(key);
    if (document !== undefined) {
      // Most recently used last: a Map iterates in insertion order.
      this.entries.delete(key);
      this.entries.set(key, document);
    }
    return document;
  }

  set(key: string, document: DocumentNode): void {
    if (key.length > this.maxEntry) return;
    if (this.entries.delete(key)) this.chars -= key.length;
    this.entries.set(key, document);
    this.chars += key.length;
    for (const oldest of this.entries.keys()) {
      if (this.chars <= this.maxChars) break;
      this.entries.delete(oldest);
      this.chars -= oldest.length;
    }
  }

  /** The characters of text held. */
  get size(): number {
    return this.chars;
  }
}

/**
 * Parse errors are not kept: a document is refused as fast as it is parsed up to its error
 * (MAX_TOKENS at most), while keeping each would hold its whole text.
 */
export const noErrorCache = { get: (_key: string): undefined => undefined, set: (_key: string, _error: unknown) => {} };
