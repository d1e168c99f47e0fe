// Statements built once and filled per use (src/db/built-sql.ts) say exactly what building them
// afresh says: get note's page, for each kind of caller.
import { describe, expect, it } from "vitest";
import { BuiltSql, SqlTemplate, standIn } from "../../src/db/built-sql.ts";
import { Prisma } from "../../src/db/client.ts";
import type { Context } from "../../src/domain/context.ts";
import { visibleNoteById, visibleNotes } from "../../src/domain/notes/service.ts";

const as = (account: { id: bigint; role: string } | undefined) => ({ caller: { account } }) as unknown as Context;

describe("built statements", () => {
  it("get note's page is visibleNotes for the note's id, for no caller, an account and a moderator", () => {
    const callers = [
      undefined,
      { id: 11n, role: "normal" },
      { id: 12n, role: "moderator" },
      { id: 13n, role: "admin" },
      { id: 14n, role: "normal" },
    ];
    // Twice each: the first builds the template, the second fills it.
    for (const account of [...callers, ...callers]) {
      for (const id of [1n, 2n]) {
        const built = visibleNoteById(as(account), id);
        const fresh = visibleNotes(as(account), Prisma.sql`n.id = ${id}`);
        expect(built.text).toBe(fresh.text);
        expect(built.values).toEqual(fresh.values);
        expect(built.strings).toEqual(fresh.strings);
      }
    }
  });

  it("a template keeps its own values and fills its stand-ins", () => {
    const a = standIn("a");
    const b = standIn("b");
    const template = new SqlTemplate(Prisma.sql`SELECT ${a}, ${"kept"}, ${b}, ${a}`, [a, b]);
    const filled = template.with([1n, 2n]);
    expect(filled).toBeInstanceOf(Prisma.Sql);
    expect(filled.text).toBe("SELECT $1, $2, $3, $4");
    expect(filled.values).toEqual([1n, "kept", 2n, 1n]);
    const again = BuiltSql.of(filled.strings, [3n], "SELECT $1");
    expect([again.text, again.values]).toEqual(["SELECT $1", [3n]]);
  });
});
