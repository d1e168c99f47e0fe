// Case folding for the search index (issue 15, point 1), against the real PostgreSQL: whenever
// PostgreSQL's ILIKE finds a query in a note, the query's bigrams, folded by src/search/fold.ts,
// are all among the note's, so Meilisearch's candidates hold every match. ILIKE lowers both
// sides one code point at a time (lower()); fold agrees with it on every code point.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fold } from "../src/search/fold.ts";
import { grams } from "../src/search/meilisearch.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const sql = () => server.services.db;

describe("fold", () => {
  it("agrees with PostgreSQL's lower() on every code point: fold(X) = fold(lower(X))", async () => {
    // Only the code points lower() changes: for the others the equation holds by itself.
    const changed = await sql().$queryRaw<{ i: number; lowered: string }[]>`
      SELECT i, lower(chr(i)) AS lowered FROM generate_series(1, 1114111) i
      WHERE i NOT BETWEEN 55296 AND 57343 AND lower(chr(i)) <> chr(i)`;
    expect(changed.length).toBeGreaterThan(1000);
    const disagree = changed
      .filter(({ i, lowered }) => fold(String.fromCodePoint(i)) !== fold(lowered))
      .map(({ i }) => i.toString(16));
    expect(disagree).toEqual([]);
    // And lower() maps each code point to one code point, so folding a text is folding each.
    expect(changed.filter(({ lowered }) => [...lowered].length !== 1)).toEqual([]);
  });

  it.each([
    ["İSTANBUL", "is"],
    ["İSTANBUL", "istanbul"],
    ["ΜΑΣΚΑ", "ΜΑΣ"],
    ["ΟΔΟΣ", "οσ"],
    ["ΟΔΟΣ", "ΟΣ"],
    ["straße", "STRAßE"],
    ["K", "k"], // KELVIN SIGN
  ])("%j ILIKE %j in PostgreSQL, and the query's grams are the note's", async (note, query) => {
    const [{ matches }] = await sql().$queryRaw<{ matches: boolean }[]>`
      SELECT ${note} ILIKE '%' || ${query} || '%' AS matches`;
    expect(matches).toBe(true);
    const held = new Set(grams(note));
    for (const gram of grams(query)) expect(held.has(gram)).toBe(true);
  });

  it("whenever PostgreSQL says c ILIKE '%q%', every gram of q is a gram of c (generated)", async () => {
    const alphabet = [..."İıIiΣσςẞßKÅåǅǆϴθΜμΟοΔδКкaAbB猫好 "];
    const text = fc.array(fc.constantFrom(...alphabet), { minLength: 0, maxLength: 12 }).map((a) => a.join(""));
    const cases = fc.sample(fc.tuple(text, text), { numRuns: 3000, seed: 15 });
    // Substrings of the note itself, in another case, so that many cases match.
    const swapped = cases.map(([c]) => {
      const chars = [...c];
      const from = Math.floor(chars.length / 3);
      return [
        c,
        chars
          .slice(from, from + 4)
          .map((x) => (x === x.toLowerCase() ? x.toUpperCase() : x.toLowerCase()))
          .join(""),
      ];
    });
    const all = [...cases, ...swapped];
    const rows = await sql().$queryRaw<{ k: number; matches: boolean }[]>`
      SELECT k::int, c ILIKE '%' || q || '%' AS matches
      FROM unnest(${all.map(([c]) => c)}::text[], ${all.map(([, q]) => q)}::text[]) WITH ORDINALITY AS t(c, q, k)`;
    let matched = 0;
    for (const { k, matches } of rows) {
      if (!matches) continue;
      matched += 1;
      const [c, q] = all[k - 1];
      const held = new Set(grams(c));
      for (const gram of grams(q)) expect(held.has(gram), `${JSON.stringify(c)} ILIKE ${JSON.stringify(q)}`).toBe(true);
    }
    expect(matched).toBeGreaterThan(1000);
  });
});
