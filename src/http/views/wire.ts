// Wire shapes: each one `named` here is one schema of openapi.json (components.schemas), used by
// the view that builds it, by the route table and by the tests. Names live in zod's global
// registry, beside the descriptions of fields.
import { z } from "zod";
import { Prisma } from "../../db/client.ts";
import type { Column, Relation, Viewer } from "../../projection/field.ts";

/** Names `schema` as the wire shape `id`. */
export function named<T extends z.ZodType>(id: string, description: string, schema: T): T {
  return schema.meta({ id, description });
}

/** A snowflake id as its decimal string (docs/http.md#ids). */
export const Snowflake = z.string().regex(/^[0-9]{1,20}$/);
/** ISO 8601 UTC with milliseconds (docs/http.md#timestamps). */
export const Timestamp = z.iso.datetime({ precision: 3 });
/** A URL, or "" where none is set (an unset avatar or header). */
export const Url = z.string();

/**
 * A member of a wire object: a column (field.ts), a column that reads `ifNull` for null, or a
 * relation drawn as another wire object.
 */
export type Member<R> =
  | Column<R>
  | { field: Column<R>; ifNull: string }
  | { field: Relation<R, unknown>; as: WireObject<never, unknown> };

/** A wire shape drawn from a projection (src/projection): from a row in hand, or in SQL. */
export interface WireObject<R, T> {
  readonly shape: z.ZodObject;
  /** Its members, for a wire object that extends it. */
  readonly members: { [K in keyof T]-?: Member<R> };
  view(row: R, viewer: Viewer): T;
  /**
   * The JSON object of the row aliased `t` (`json_build_object`). A member the shape may leave
   * out is null here, unless `absentOnNull`: then (`json_object ... ABSENT ON NULL`) a member whose
   * value is null is left out, here and in the objects nested in it, as whole answers write them
   * (`jsonSql`), no member of a wire shape being null.
   */
  sql(t: string, viewer: Viewer, absentOnNull?: boolean): Prisma.Sql;
}

/** A relation drawn as the wire object `as` (a Member). */
export function nested<R, C>(field: Relation<R, C[]>, as: WireObject<C, unknown>): Member<R>;
export function nested<R, C>(field: Relation<R, C | null>, as: WireObject<C, unknown>): Member<R>;
export function nested<R>(field: Relation<R, unknown>, as: WireObject<never, unknown>): Member<R> {
  return { field, as };
}

/**
 * The wire object of `shape` whose every member is drawn from a projection's field: `view` leaves
 * out a member the shape makes optional when its value is null, as `jsonSql` does.
 */
export function wireObject<R, S extends z.ZodObject>(
  shape: S,
  members: { [K in keyof z.infer<S>]-?: Member<R> },
): WireObject<R, z.infer<S>> {
  const entries = Object.entries(members as Record<string, Member<R>>).map(([key, member]) => ({
    key,
    member,
    optional: (shape.shape[key] as z.ZodType).safeParse(undefined).success,
  }));
  const unknownKeys = Object.keys(shape.shape).filter((key) => !Object.hasOwn(members, key));
  if (unknownKeys.length) throw new Error(`${shape.meta()?.id}: no member for ${unknownKeys.join(", ")}`);
  return {
    shape,
    members,
    view(row, viewer) {
      const out: Record<string, unknown> = {};
      for (const { key, member, optional } of entries) {
        let value: unknown;
        if ("kind" in member) value = member.value(row, viewer);
        else if ("ifNull" in member) value = member.field.value(row, viewer) ?? member.ifNull;
        else {
          const rows = member.field.value(row as never, viewer);
          value = member.field.many
            ? (rows as never[]).map((r) => member.as.view(r, viewer))
            : rows === null
              ? null
              : member.as.view(rows as never, viewer);
        }
        if (!(optional && value === null)) out[key] = value;
      }
      return out as z.infer<S>;
    },
    sql(t, viewer, absentOnNull = false) {
      const pairs = entries.map(({ key, member }) => {
        const value =
          "kind" in member
            ? member.sql(t, viewer)
            : "ifNull" in member
              ? Prisma.sql`COALESCE(${member.field.sql(t, viewer)}, ${member.ifNull})`
              : member.field.sql(t, (alias) => member.as.sql(alias, viewer, absentOnNull), viewer);
        return Prisma.sql`${Prisma.raw(`'${key}'`)}${Prisma.raw(absentOnNull ? " VALUE " : ", ")}${value}`;
      });
      return absentOnNull
        ? Prisma.sql`json_object(${Prisma.join(pairs, ", ")} ABSENT ON NULL)`
        : Prisma.sql`json_build_object(${Prisma.join(pairs, ", ")})`;
    },
  };
}

/**
 * A wire object of the row aliased `t` as a whole answer's JSON, the members it leaves out absent:
 * built without them (`ABSENT ON NULL` at every level), where `json_strip_nulls` of the whole
 * parsed each note's JSON again and wrote it anew, a fifth of a page's JSON (bench/README.md,
 * "Search: the notes' JSON without a second pass"). Its text has PostgreSQL's `" : "` between key
 * and value, as json_build_object writes it.
 */
export function jsonSql<R>(object: WireObject<R, unknown>, t: string, viewer: Viewer): Prisma.Sql {
  return object.sql(t, viewer, true);
}
