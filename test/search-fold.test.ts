// Case folding for the Meilisearch index (docs/search.md#backends), against real
// PostgreSQL databases: whenever PostgreSQL says `c ILIKE '%' || q || '%'`, fold(q) is a substring
// of fold(c), so every bigram of the query is one of the note's and Meilisearch's candidates hold
// every match; under the builtin C.UTF-8 locale the tests run on, under PG_UNICODE_FAST and ICU
// (whose lower() maps fully: ΟΔΟΣ to οδος, İ to i + U+0307), and a Turkish ICU database is refused.
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, type Db } from "../src/db/client.ts";
import { databaseFolding, fold, foldingDisagrees } from "../src/domain/search/fold.ts";
import { databaseUrl } from "./support/global-setup.ts";
import { freshDatabase } from "./support/server.ts";

let db: pg.Client;
beforeAll(async () => {
  db = new pg.Client({ connectionString: await freshDatabase() });
  await db.connect();
});
afterAll(() => db?.end());

const LAST = 0x10ffff;
const surrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff;
// Where fold is not lower() of the builtin C.UTF-8 locale: what a full mapping makes otherwise.
const FULL_MAPPING_ONLY = new Set(["\u03c2", "\u0307"]);

/** Adjacent code point pairs, as the index's grams are built from the folded text. */
function bigrams(text: string): string[] {
  const chars = [...text];
  return chars.slice(1).map((char, i) => chars[i] + char);
}

function bigramsHeld(note: string, query: string): boolean {
  const held = new Set(bigrams(note));
  return bigrams(query).every((gram) => held.has(gram));
}

describe("fold", () => {
  it("is PostgreSQL's lower() on every code point but ς and U+0307, and lower() of each code point is one code point", async () => {
    // Every code point but NUL (text cannot hold it) and the surrogates (not characters);
    // only those lower() changes come back.
    const { rows } = await db.query<{ i: number; lowered: string }>(
      `SELECT i, lower(chr(i)) AS lowered FROM generate_series(1, $1::int) i
       WHERE (i < 55296 OR i > 57343) AND lower(chr(i)) <> chr(i)`,
      [LAST],
    );
    expect(rows.length).toBeGreaterThan(1400);
    const lowered = new Map(rows.map(({ i, lowered }) => [i, lowered]));
    expect(rows.filter(({ lowered }) => [...lowered].length !== 1)).toEqual([]);
    const disagree: string[] = [];
    for (let cp = 1; cp <= LAST; cp++) {
      if (surrogate(cp)) continue;
      const char = String.fromCodePoint(cp);
      const lower = lowered.get(cp) ?? char;
      if ((fold(char) !== lower && !FULL_MAPPING_ONLY.has(char)) || fold(char) !== fold(lower))
        disagree.push(cp.toString(16));
    }
    expect(disagree).toEqual([]);
  });

  it("folds one code point at a time, whatever is around it (no final sigma, no i + U+0307)", () => {
    const chars: string[] = [];
    for (let cp = 1; cp <= LAST; cp++) if (!surrogate(cp)) chars.push(String.fromCodePoint(cp));
    const each = chars.map(fold);
    for (const between of ["", " ", "A", "Σ", "İ", "\u0307"]) {
      expect(fold(chars.join(between)) === each.join(fold(between)), `joined by ${JSON.stringify(between)}`).toBe(true);
    }
  });

  it("every code point fold changes ILIKE its fold in PostgreSQL", async () => {
    const changed: number[] = [];
    for (let cp = 1; cp <= LAST; cp++) {
      const char = String.fromCodePoint(cp);
      if (!surrogate(cp) && fold(char) !== char && !FULL_MAPPING_ONLY.has(char)) changed.push(cp);
    }
    const { rows } = await db.query<{ i: number }>(
      `SELECT i FROM unnest($1::int[], $2::text[]) AS t(i, folded) WHERE NOT chr(i) ILIKE folded`,
      [changed, changed.map((cp) => fold(String.fromCodePoint(cp)))],
    );
    expect(rows.map(({ i }) => i.toString(16))).toEqual([]);
  });

  it.each([
    ["İSTANBUL", "is"],
    ["ΜΑΣΚΑ", "ΜΑΣ"],
    ["ΟΔΟΣ", "οσ"],
  ])("%s ILIKE %s: the query's bigrams are the note's (not with toLowerCase)", async (note, query) => {
    const { rows } = await db.query<{ matches: boolean }>(`SELECT $1::text ILIKE '%' || $2::text || '%' AS matches`, [
      note,
      query,
    ]);
    expect(rows[0].matches).toBe(true);
    expect(bigramsHeld(fold(note), fold(query))).toBe(true);
    expect(bigramsHeld(note.toLowerCase(), query.toLowerCase())).toBe(false);
  });

  it("whenever PostgreSQL says c ILIKE '%q%', fold(q) is in fold(c) and its bigrams are fold(c)'s (generated)", () =>
    ilikeHeld(db));
});

/** Whenever `client`'s database says c ILIKE '%q%', fold(q) is in fold(c), its bigrams fold(c)'s. */
async function ilikeHeld(client: pg.Client): Promise<void> {
  // The hard cases: İ ı I i, the three sigmas, ẞ ß, Kelvin K and Ångström Å, the titlecase ǅ,
  // ϴ and ϑ (lower() and case folding differ), ſ and µ, Cherokee and Georgian Mtavruli, a letter
  // new in Unicode 17 (Ꟍ U+A7CE, ꟍ U+A7CF), a combining dot; around them Greek, Cyrillic, CJK,
  // ASCII and spaces. No LIKE specials (% _ \).
  const alphabet = [
    ..."İıIiΣσςẞßKkÅåǄǅǆϴϑθΘſsµμᏸᏰꭰᎠᲐა\uA7CE\uA7CF\u0307",
    ..."ΑαΆάΟοΔδΜμΚκΐΰЁёЀѐДдЯяᲀвІі",
    ..."猫好東京",
    ..."aAzZ  ",
  ];
  const text = fc.array(fc.constantFrom(...alphabet), { maxLength: 16 });
  // Half the queries are a piece of their note with its letters' case changed, so many match.
  const recase = fc.array(fc.constantFrom("upper", "lower", "same"), { minLength: 5, maxLength: 5 });
  const pair = fc.oneof(
    fc.tuple(text, text).map(([c, q]) => ({ c: c.join(""), q: q.slice(0, 5).join("") })),
    fc.tuple(text, fc.nat(15), fc.integer({ min: 1, max: 5 }), recase).map(([c, from, length, cases]) => ({
      c: c.join(""),
      q: c
        .slice(from, from + length)
        .map((char, k) =>
          cases[k] === "upper" ? char.toUpperCase() : cases[k] === "lower" ? char.toLowerCase() : char,
        )
        .join(""),
    })),
  );
  let matched = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(pair, { minLength: 500, maxLength: 500 }), async (pairs) => {
      const { rows } = await client.query<{ k: string }>(
        `SELECT k FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(c, q, k) WHERE c ILIKE '%' || q || '%'`,
        [pairs.map(({ c }) => c), pairs.map(({ q }) => q)],
      );
      matched += rows.length;
      const missed = rows
        .map(({ k }) => pairs[Number(k) - 1])
        .filter(({ c, q }) => !fold(c).includes(fold(q)) || !bigramsHeld(fold(c), fold(q)));
      expect(missed).toEqual([]);
    }),
    { numRuns: 8, seed: 15 },
  );
  expect(matched).toBeGreaterThan(1500);
}

describe("databases whose lower() maps fully, or otherwise", () => {
  const adminUrl = () => inject("adminUrl");
  const made: string[] = [];
  const clients: (pg.Client | Db)[] = [];
  async function database(locale: string): Promise<{ client: pg.Client; db: Db }> {
    const name = `murmur_fold_${made.length}_${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name} ${locale} TEMPLATE template0`);
    await admin.end();
    made.push(name);
    const client = new pg.Client({ connectionString: databaseUrl(adminUrl(), name) });
    await client.connect();
    const db = createDb(databaseUrl(adminUrl(), name), () => {}, 2);
    clients.push(client, db);
    return { client, db };
  }
  afterAll(async () => {
    for (const client of clients) await ("$disconnect" in client ? client.$disconnect() : client.end());
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    for (const name of made) await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.end();
  });

  it.each([
    ["builtin PG_UNICODE_FAST", "LOCALE_PROVIDER builtin BUILTIN_LOCALE 'PG_UNICODE_FAST'"],
    ["ICU und", "LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C.UTF-8'"],
  ])(
    "%s: ΟΔΟΣ is found by ος as ILIKE finds it, fold agrees with its lower(), generated pairs hold",
    async (_, locale) => {
      const { client, db } = await database(locale);
      const { rows } = await client.query(
        `SELECT lower('ΟΔΟΣ') AS sigma, lower('İ') AS dotted, 'ΟΔΟΣ' ILIKE '%ος%' AS found`,
      );
      // The full mapping: the final sigma, and İ as i + U+0307.
      expect(rows[0]).toEqual({ sigma: "οδος", dotted: "i\u0307", found: true });
      expect(bigramsHeld(fold("ΟΔΟΣ"), fold("ος"))).toBe(true);
      expect(await foldingDisagrees(db)).toBeUndefined();
      await ilikeHeld(client);
    },
  );

  it("a Turkish ICU database (I lowers to ı) is refused, with the reason; the tests' own database is not", async () => {
    const { db } = await database("LOCALE_PROVIDER icu ICU_LOCALE 'tr-TR' LOCALE 'C.UTF-8'");
    const reason = await databaseFolding(db);
    expect(reason).toMatch(/lower\("I"\) = "ı"/);
    // Asked once per client.
    expect(databaseFolding(db)).toBe(databaseFolding(db));
    const ours = createDb(await freshDatabase(), () => {}, 2);
    clients.push(ours);
    expect(await databaseFolding(ours)).toBeUndefined();
  });
});
