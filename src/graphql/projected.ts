// GraphQL fields drawn from a projection (src/projection): a field's resolver is the projection's
// value, and the field carries the projection in its extensions, from which the compiled pages
// write its SQL (compiled-walk.ts). A field without one is answered by the executor only.
import type { Context } from "../domain/context.ts";
import { type Column, type Relation, viewerOf } from "../projection/field.ts";
import type { CompiledExtensions } from "./compiled-walk.ts";

/** A field's resolver and extensions, from its projection's column. */
export function projected<R, T>(field: Column<R, T>) {
  const extensions: CompiledExtensions = { projection: field as Column<never> };
  return { resolve: (row: R, _args: object, ctx: Context) => field.value(row, viewerOf(ctx)), extensions };
}

/** A field's resolver and extensions, from its projection's relation (rows of the field's type). */
export function projectedRelation<R, V>(field: Relation<R, V>) {
  const extensions: CompiledExtensions = { projection: field as Relation<never, unknown> };
  return {
    resolve: (row: R, _args: object, ctx: Context) => field.value(row, viewerOf(ctx)),
    extensions,
  };
}
