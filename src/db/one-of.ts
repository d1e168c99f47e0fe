// A column equal to one of a few values, as SQL that keeps a named statement's generic plan.
// PostgreSQL plans a named statement (src/db/client.ts) once and keeps that plan only when it
// costs no more than the plans it made for the values; an array parameter it cannot see it takes
// for 10 elements, so a statement asked with one or two ids was planned anew at every call (note
// creation's mentioned names, the live hub's notes read: bench/README.md, "Note creation's plans").
// A list of parameters it counts as it is. test/note-statement-plans.test.ts.
import { Prisma } from "./client.ts";

/** Up to this many values go as a list of parameters; more as one array (one text for any number). */
export const LISTED = 8;

/** `column` equal to one of `values` (of SQL type `type`), as SQL; false for none. */
export function oneOf(column: Prisma.Sql, values: readonly unknown[], type: "bigint" | "text"): Prisma.Sql {
  if (values.length === 0) return Prisma.sql`false`;
  const cast = Prisma.raw(type);
  if (values.length > LISTED) return Prisma.sql`${column} = ANY(${values}::${cast}[])`;
  return Prisma.sql`${column} IN (${Prisma.join(values.map((value) => Prisma.sql`${value}::${cast}`))})`;
}

/**
 * `values` as one array parameter of `type`, behind a sub-select: the planner sees neither the
 * array nor its length, so a statement of many rows given as arrays (a batch of notes or
 * reactions, a crowd's ids) keeps one generic plan per connection whatever their number, where the
 * lengths, seen, made PostgreSQL plan it again at every call (bench/README.md, "Reactions in one
 * statement").
 */
export function unplannedArray(values: unknown, type: "bigint" | "text" | "int" | "boolean"): Prisma.Sql {
  return Prisma.sql`(SELECT ${values}::${Prisma.raw(type)}[])`;
}
