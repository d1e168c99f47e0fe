// Relay-style connections for every paged list (docs/http.md#connections): newest first, `first`
// from 1 to the list's page size, `after` a cursor (the last item's id). A page past the end is
// empty edges with `hasNextPage: false`; REST's NOTHING_LEFT stays REST's. A connection field
// returns the connection itself or a DomainError (the errors plugin's `directResult`), so
// pagination helpers (urql's relayPagination, Relay-style caches) find `edges` and `pageInfo` at
// the field that takes `first` and `after`, where a `...Success { data }` wrapper would hide them
// from its arguments.
import type { ObjectRef } from "@pothos/core";
import { DomainError } from "../domain/errors.ts";
import { builder } from "./builder.ts";

type Types = typeof builder.$inferSchemaTypes;

/** One page of items, each with its snowflake id as its cursor. */
export interface Page<T extends { id: bigint }> {
  items: T[];
  hasNextPage: boolean;
}

const cursorOf = (item: { id: bigint }) => item.id.toString();

const PageInfo = builder.objectRef<Page<{ id: bigint }>>("PageInfo").implement({
  description: "Where a page ends. Pass `endCursor` as `after` for the next one.",
  fields: (t) => ({
    hasNextPage: t.exposeBoolean("hasNextPage"),
    hasPreviousPage: t.boolean({ description: "Paging is forward only: always false.", resolve: () => false }),
    startCursor: t.string({ nullable: true, resolve: (p) => (p.items.length ? cursorOf(p.items[0]) : null) }),
    endCursor: t.string({
      nullable: true,
      resolve: (p) => (p.items.length ? cursorOf(p.items[p.items.length - 1]) : null),
    }),
  }),
});

/** The `<name>Connection` and `<name>Edge` types of a node type. */
export function connectionType<T extends { id: bigint }>(name: string, node: ObjectRef<Types, T>, description: string) {
  const Edge = builder.objectRef<T>(`${name}Edge`).implement({
    fields: (t) => ({
      cursor: t.string({ resolve: cursorOf }),
      // The item is the node; the cast only tells the compiler so for a generic T.
      node: t.field({ type: node, resolve: (item) => item as never }),
    }),
  });
  return builder.objectRef<Page<T>>(`${name}Connection`).implement({
    description,
    fields: (t) => ({
      // The connection field's `first` already counts the edges: each is counted once.
      edges: t.field({ type: [Edge], complexity: { field: 1, multiplier: 1 }, resolve: (p) => p.items }),
      pageInfo: t.field({ type: PageInfo, resolve: (p) => p }),
    }),
  });
}

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export const firstDescription = (size: number) => `1 to ${size}, default ${size}`;
export const AFTER_DESCRIPTION = "A cursor (`endCursor`): what comes after it";

/**
 * A connection field's cost (bounds.ts): the `first` rows it reads, whatever is selected of
 * them, and what is selected of each item `first` times. `first` is taken within 1..size: one
 * out of range never costs more than a full page, so the field itself answers INVALID_REQUEST
 * rather than the whole request being refused for its cost.
 */
export const pageComplexity =
  (size: number, byDefault = size) =>
  (args: PageArgs) => {
    const first = Math.min(Math.max(args.first ?? byDefault, 1), size);
    return { field: first, multiplier: first };
  };

/** Loads one page: `load` gets the cursor and one item more than `first`, to tell if there is more. */
export async function page<T extends { id: bigint }>(
  args: PageArgs,
  size: number,
  load: (after: string | undefined, limit: number) => Promise<T[]>,
): Promise<Page<T>> {
  const first = args.first ?? size;
  if (!Number.isInteger(first) || first < 1 || first > size) {
    throw new DomainError("INVALID_REQUEST", { detail: `first must be 1 to ${size}, was ${first}` });
  }
  const items = await load(args.after ?? undefined, first + 1);
  return { items: items.slice(0, first), hasNextPage: items.length > first };
}
