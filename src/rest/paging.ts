// REST's end of a list paged by `before_id` (docs/timelines.md#paging): the domain returns a page
// past the end empty, as any page; REST answers it 404 NOTHING_LEFT rather than [], so a client
// paging back knows it reached the end. GraphQL's connections end with an empty page instead.
import { DomainError } from "../domain/errors.ts";
import type { Route } from "./route.ts";

/** NOTHING_LEFT for an empty page asked for with `before_id`, on a route that declares it. */
export function refusePastTheEnd(r: Route, query: unknown, result: unknown): void {
  if (!r.errors.includes("NOTHING_LEFT")) return;
  if ((query as { before_id?: string } | undefined)?.before_id === undefined) return;
  const items = r.pageItems ? r.pageItems(result) : (result as readonly unknown[]);
  if (items.length === 0) throw new DomainError("NOTHING_LEFT");
}
