// Phrase candidates (docs/search.md#matching): a search with a phrase of several words is narrowed
// by the phrase indexes first (whose trigrams span words), and the notes found are exactly those
// the plain filter finds (tested equal against the Prisma form alone, on texts made to trip it:
// letter case, repeated and odd spaces, LIKE's wildcards, the index's own space letter, CJK,
// content warnings), while a phrase whose every trigram is common but which no note holds is
// answered from few or no candidates.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileSearch, PHRASE_CANDIDATES, phraseCandidates } from "../src/domain/search/postgres.ts";
import { parseSearchQuery } from "../src/domain/search/query.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;

const TEXTS = [
  "seeded note one",
  "Seeded  Note two",
  "note seeded? no: note, seeded",
  "the quick brown fox",
  "QUICK BROWN",
  "a 100% match_here \\ back",
  "ǂ already ǂ here",
  "note\tseeded with a tab",
  "İstanbul ΟΔΟΣ street",
  "猫が 好き です",
  " leading and trailing ",
];

beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "alice");
  const db = server.services.db;
  await db.note.createMany({
    data: TEXTS.flatMap((content, i) => [
      { id: server.services.ids.next(), authorId: BigInt(alice.id), content },
      { id: server.services.ids.next(), authorId: BigInt(alice.id), content: `cw ${i}`, cwComment: content },
    ]),
  });
});
afterAll(() => server?.close());

/** The notes the filter alone finds (the Prisma form, no candidates). */
async function byFilter(query: string): Promise<bigint[]> {
  const rows = await server.services.db.note.findMany({
    where: compileSearch(parseSearchQuery(query), new Map()),
    select: { id: true },
    orderBy: { id: "asc" },
  });
  return rows.map((r) => r.id);
}

async function expectSuperset(query: string) {
  const matches = await byFilter(query);
  const candidates = await phraseCandidates(server.services.db, parseSearchQuery(query));
  if (candidates === undefined) return;
  const held = new Set(candidates);
  for (const id of matches) expect(held.has(id), `${query}: ${id}`).toBe(true);
}

describe("phrase candidates", () => {
  it.each([
    '"seeded note"',
    '"note seeded"',
    '"SEEDED NOTE"',
    '"seeded  note"',
    '"quick brown"',
    '"brown fox" quick',
    '"100% match"',
    '"match_here \\"',
    '"ǂ already"',
    '"already here"',
    '"note seeded"',
    '"istanbul οδος"',
    '"İSTANBUL ΟΔΟΣ"',
    '"猫が 好き"',
    '" leading"',
    '"trailing "',
    '"with a tab"',
    "seeded",
    "SEEDED note",
    "quick -brown",
    "100%",
    "match_here",
    "ǂ already",
    "ΟΔΟΣ",
    "好き",
  ])("%s: every match is a candidate, and the search answers the filter's notes", async (query) => {
    await expectSuperset(query);
    const answer = await server.request("GET", `/search/notes?${new URLSearchParams({ query })}`);
    expect(answer.status).toBe(200);
    const found = answer.body.map((n: { id: string }) => BigInt(n.id)).sort((a: bigint, b: bigint) => (a < b ? -1 : 1));
    expect(found).toEqual(await byFilter(query));
  });

  it("are not asked for without a required phrase of several words", async () => {
    for (const query of ["seeded", '"seeded"', "seeded note", "seeded OR note", '-"seeded note" ab', "from:alice"])
      expect(await phraseCandidates(server.services.db, parseSearchQuery(query))).toBeUndefined();
    expect(await phraseCandidates(server.services.db, parseSearchQuery('"seeded note" ab'))).toBeDefined();
  });

  it("a phrase every note's words hold, in an order none has: no candidate at all", async () => {
    expect(await byFilter('"fox brown"')).toEqual([]);
    expect(await phraseCandidates(server.services.db, parseSearchQuery('"fox brown"'))).toEqual([]);
  });

  it("hold every match for generated phrases over a small alphabet", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[a-cA-C ǂ%_]{1,6}$/).filter((s) => /\S\s+\S/.test(s) && !s.includes('"')),
        async (phrase) => {
          await expectSuperset(`"${phrase}"`);
        },
      ),
      { numRuns: 60 },
    );
  });

  it(`give up past ${PHRASE_CANDIDATES} candidates`, async () => {
    await server.services.db.note.createMany({
      data: Array.from({ length: PHRASE_CANDIDATES + 1 }, () => ({
        id: server.services.ids.next(),
        authorId: BigInt(alice.id),
        content: "very common phrase",
      })),
    });
    expect(await phraseCandidates(server.services.db, parseSearchQuery('"common phrase"'))).toBeUndefined();
  });
});
