// A wire type's fields, each named once with both its forms side by side: its value from a row in
// hand (TypeScript) and its value in a statement (SQL). Every renderer is drawn from these tables:
// REST's views and JSON page writer (http/views/wire.ts), the GraphQL resolvers and the compiled
// pages (graphql/projected.ts), so a field is one entry and no renderer draws it its own way
// (docs/http.md#one-shape).
import type { Config } from "../config.ts";
import { Prisma } from "../db/client.ts";
import type { Context } from "../domain/context.ts";
import { isoTimeSql } from "../domain/drive/urls.ts";
import { optionalAccount } from "../domain/sessions/caller.ts";

/** What a value may depend on besides its row: the caller, and this instance's addresses. */
export interface Viewer extends Pick<Config, "publicUrl" | "localHost"> {
  viewerId: bigint | undefined;
}

/**
 * Kept on the context itself: a WeakMap keyed by each request's context made every scavenge walk
 * its entries (V8's ephemeron tables), some 3% of get note's server CPU (bench/README.md).
 */
const VIEWER = Symbol("viewer");

/** The Viewer of a request's context, made once per context. */
export function viewerOf(ctx: Context): Viewer {
  const kept = ctx as Context & { [VIEWER]?: Viewer };
  let viewer = kept[VIEWER];
  if (!viewer) {
    viewer = { viewerId: optionalAccount(ctx)?.id, publicUrl: ctx.config.publicUrl, localHost: ctx.config.localHost };
    kept[VIEWER] = viewer;
  }
  return viewer;
}

/**
 * A field whose value is written whole: a JSON scalar, or a JSON value (a record). `sql` is its
 * value for the row aliased `t` in a statement, `value` for a row in hand; a null in one is a null
 * in the other.
 */
export interface Column<R, T = unknown> {
  readonly kind: "column";
  readonly value: (row: R, viewer: Viewer) => T;
  readonly sql: (t: string, viewer: Viewer) => Prisma.Sql;
}

/**
 * A field whose value is rows of another wire type: `V` is one (or null), or a list. `sql` is
 * given the other type's object as SQL of a row alias it names, and answers JSON (null for none,
 * `[]` for an empty list); `value` gives the rows.
 */
export interface Relation<R, V> {
  readonly kind: "relation";
  readonly many: boolean;
  readonly value: (row: R, viewer: Viewer) => V;
  readonly sql: (t: string, child: (alias: string) => Prisma.Sql, viewer: Viewer) => Prisma.Sql;
}

export type Field<R> = Column<R> | Relation<R, unknown>;

export function column<R, T>(
  value: (row: R, viewer: Viewer) => T,
  sql: (t: string, viewer: Viewer) => Prisma.Sql,
): Column<R, T> {
  return { kind: "column", value, sql };
}

/** A column of the row as it is: `key` of the row in hand, `name` in the table. */
export function stored<K extends string, T>(key: K, name: string): Column<{ [P in K]: T }, T> {
  return column(
    (row) => row[key],
    (t) => columnOf(t, name),
  );
}

/** The column `name` of the row aliased `t`, in SQL. */
export function columnOf(t: string, name: string): Prisma.Sql {
  return Prisma.raw(`${t}.${name}`);
}

/** A snowflake column, as its decimal string (docs/http.md#ids). */
export function snowflake<K extends string>(key: K, name: string): Column<{ [P in K]: bigint }, string> {
  return column(
    (row) => row[key].toString(),
    (t) => columnOf(t, `${name}::text`),
  );
}

/** A snowflake column that may be null, which stays null. */
export function optionalSnowflake<K extends string>(
  key: K,
  name: string,
): Column<{ [P in K]: bigint | null }, string | null> {
  return column(
    (row) => row[key]?.toString() ?? null,
    (t) => columnOf(t, `${name}::text`),
  );
}

/** A timestamp column, as ISO 8601 UTC with milliseconds (docs/http.md#timestamps). */
export function timestamp<K extends string>(key: K, name: string): Column<{ [P in K]: Date }, string> {
  return column(
    (row) => row[key].toISOString(),
    (t) => isoTimeSql(columnOf(t, name)),
  );
}

type RelationSql = Relation<never, unknown>["sql"];

/** A relation to one row of another type (or none: `C` includes null). */
export function one<R, C>(value: (row: R, viewer: Viewer) => C, sql: RelationSql): Relation<R, C> {
  return { kind: "relation", many: false, value, sql };
}

/** A relation to a list of rows of another type. */
export function many<R, C>(value: (row: R, viewer: Viewer) => C[], sql: RelationSql): Relation<R, C[]> {
  return { kind: "relation", many: true, value, sql };
}
