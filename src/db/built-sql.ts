// Statements built once and used again with new values: the same text string each time, so
// naming the statement (db/client.ts) is a lookup, and nothing of its text is built per request.
import { Prisma } from "./client.ts";

const NO_STRINGS = [""];
const NO_VALUES: unknown[] = [];

/** A statement whose text was built once. */
export class BuiltSql extends Prisma.Sql {
  private built = "";

  override get text(): string {
    return this.built;
  }

  /**
   * The statement of `strings` and `values` (already flat: no Prisma.Sql among the values) with
   * `text` as its text, made without Prisma.Sql's copy of its parts, which every use paid.
   */
  static of(strings: readonly string[], values: readonly unknown[], text: string): BuiltSql {
    const sql = new BuiltSql(NO_STRINGS, NO_VALUES);
    (sql as { strings: readonly string[] }).strings = strings;
    (sql as { values: readonly unknown[] }).values = values;
    sql.built = text;
    return sql;
  }
}

/**
 * `sql`, built once with stand-ins among its values (objects of their own, frozen), as a
 * template: each use puts the real values in the stand-ins' places. What the text depends on
 * (which kind of caller, say) is the caller's to key its templates by.
 */
export class SqlTemplate {
  private readonly strings: readonly string[];
  private readonly text: string;
  private readonly values: readonly unknown[];
  /** For each value, the index of its stand-in, or -1 for a value of the template's own. */
  private readonly slots: readonly number[];

  constructor(sql: Prisma.Sql, standIns: readonly unknown[]) {
    this.strings = sql.strings;
    this.text = sql.text;
    this.values = sql.values;
    this.slots = sql.values.map((value) => standIns.indexOf(value));
  }

  /** The statement with `values` (in the stand-ins' order) in their places. */
  with(values: readonly unknown[]): BuiltSql {
    const filled = new Array<unknown>(this.slots.length);
    for (let i = 0; i < filled.length; i++) {
      const slot = this.slots[i];
      filled[i] = slot === -1 ? this.values[i] : values[slot];
    }
    return BuiltSql.of(this.strings, filled, this.text);
  }
}

/** A value standing in for another while a template is built: equal to nothing but itself. */
export function standIn(name: string): bigint {
  return Object.freeze({ standIn: name }) as unknown as bigint;
}
