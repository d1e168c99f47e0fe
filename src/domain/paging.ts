// Paging by id (docs/timelines.md#paging): `before_id` must be a snowflake. A page past the end
// is returned empty, as any page; each protocol says so its own way (REST's NOTHING_LEFT is
// src/rest/paging.ts's, a GraphQL connection ends with an empty page).
import { MAX_STORED_ID, parseSnowflake64 } from "../db/snowflake.ts";
import { DomainError } from "./errors.ts";

/**
 * The id to page before, undefined for the first page; INVALID_REQUEST when not a snowflake.
 * Any 64-bit snowflake is taken; one above the largest storable id pages from the newest
 * (ids are 42 bits of milliseconds from 2022: none reaches 2^63 - 1 before 2161).
 */
export function parseBeforeId(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  const id = parseSnowflake64(text);
  if (id === undefined) throw new DomainError("INVALID_REQUEST");
  return id > MAX_STORED_ID ? MAX_STORED_ID : id;
}

/** The id filter for a page: older than `before`, or no filter for the first page. */
export function olderThan(before: bigint | undefined): { id?: { lt: bigint } } {
  return before === undefined ? {} : { id: { lt: before } };
}
