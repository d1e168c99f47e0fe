// Paging by id (CONTRACT 6): `before_id` must be a snowflake, and a page asked for with
// `before_id` that finds nothing older is NOTHING_LEFT rather than [].
import { parseSnowflake } from "../db/snowflake.ts";
import { DomainError } from "./errors.ts";

/** The id to page before, undefined for the first page; INVALID_REQUEST when not a snowflake. */
export function parseBeforeId(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  const id = parseSnowflake(text);
  if (id === undefined) throw new DomainError("INVALID_REQUEST");
  return id;
}

/** The id filter for a page: older than `before`, or no filter for the first page. */
export function olderThan(before: bigint | undefined): { id?: { lt: bigint } } {
  return before === undefined ? {} : { id: { lt: before } };
}

/** A page of a timeline-like list: empty after `before` means NOTHING_LEFT. */
export function timelinePage<T>(before: bigint | undefined, items: T[]): T[] {
  if (before !== undefined && items.length === 0) throw new DomainError("NOTHING_LEFT");
  return items;
}
