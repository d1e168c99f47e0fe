// The parts of the Meilisearch path that need no server (docs/search.md#backends): request
// splitting by size, finding the refused rows of a batch, choosing the query's words, the supported
// versions, the settings read back, and what the completeness marker means.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FOLDING_VERSION } from "../../src/domain/search/fold.ts";
import {
  bySize,
  CANDIDATES,
  chooseGrams,
  grams,
  MAX_REQUEST_BYTES,
  searchDocument,
  settingsDiff,
  supportedVersion,
  TaskFailed,
} from "../../src/search/meilisearch.ts";
import { completeness } from "../../src/search/rebuild.ts";
import { applyBisecting } from "../../src/search/worker.ts";

describe("requests split by size", () => {
  it("2,000 notes of 3,000 four-byte characters and a 256-character warning go in requests under 10 MB", () => {
    // Distinct characters, so each note's grams are as many as they can be.
    const text = (seed: number) =>
      Array.from({ length: 3000 }, (_, i) => String.fromCodePoint(0x20000 + ((seed * 7919 + i * 31) % 40_000))).join(
        "",
      );
    const documents = Array.from({ length: 2000 }, (_, i) =>
      searchDocument({ id: BigInt(i + 1) << 22n, content: text(i), cwComment: "⚠".repeat(256) }),
    );
    const total = documents.reduce((sum, d) => sum + Buffer.byteLength(JSON.stringify(d)), 0);
    expect(total).toBeGreaterThan(100 * 1024 * 1024); // what Meilisearch refuses in one request
    const requests = bySize(documents);
    expect(requests.flat()).toEqual(documents);
    for (const request of requests)
      expect(Buffer.byteLength(JSON.stringify(request))).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
    expect(requests.length).toBeGreaterThanOrEqual(Math.ceil(total / MAX_REQUEST_BYTES));
  });

  it("keeps order, never leaves a request empty, and sends a document larger than the bound alone", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 200 })), fc.integer({ min: 2, max: 400 }), (texts, max) => {
        const requests = bySize(texts, max);
        expect(requests.flat()).toEqual(texts);
        for (const request of requests) {
          expect(request.length).toBeGreaterThan(0);
          if (request.length > 1) expect(Buffer.byteLength(JSON.stringify(request))).toBeLessThanOrEqual(max);
        }
      }),
    );
  });
});

describe("a batch with refused rows", () => {
  const refusedIf = (bad: Set<number>) => async (rows: number[]) => {
    if (rows.some((r) => bad.has(r))) throw new TaskFailed(`refused ${rows}`);
  };
  const isRefusal = (err: unknown) => err instanceof TaskFailed;

  it("finds each refused row and applies every other, in order", async () => {
    const rows = Array.from({ length: 500 }, (_, i) => i);
    const applied: number[][] = [];
    const apply = async (batch: number[]) => {
      await refusedIf(new Set([17, 400]))(batch);
      applied.push(batch);
    };
    const result = await applyBisecting(rows, apply, isRefusal);
    expect(result.failed.map((f) => f.row)).toEqual([17, 400]);
    expect(result.applied).toEqual(rows.filter((r) => r !== 17 && r !== 400));
    expect(applied.flat()).toEqual(result.applied);
    // About 2 log2(500) requests per bad row, not 500.
    expect(applied.length).toBeLessThan(40);
  });

  it("does not split when Meilisearch does not answer: the whole batch waits", async () => {
    let calls = 0;
    const down = async () => {
      calls += 1;
      throw new Error("connect ECONNREFUSED");
    };
    await expect(applyBisecting([1, 2, 3, 4], down, isRefusal)).rejects.toThrow("ECONNREFUSED");
    expect(calls).toBe(1);
  });
});

describe("the query's words", () => {
  it("takes the rarest gram of each term, then the rarest of the rest, ten at most", () => {
    const common = grams("the quick brown fox");
    const rare = grams("zq");
    expect(common.length + rare.length).toBeGreaterThan(10);
    const count = (token: string) => (rare.includes(token) ? 1 : 1000 + common.indexOf(token));
    const chosen = chooseGrams([common, rare], count);
    expect(chosen).toEqual([rare[0], ...common.slice(0, 9)]);
  });

  it("a rare term after ten common grams is asked for (the first ten words alone would miss it)", () => {
    const terms = ["abcdefghijkl", "xz"].map(grams);
    expect(terms[0].length).toBeGreaterThan(10);
    const chosen = chooseGrams(terms, (t) => (terms[1].includes(t) ? 3 : 50_000));
    expect(chosen.slice(0, 2)).toContain(terms[1][0]);
  });

  it("more terms than words: the rarest terms' rarest grams", () => {
    const terms = Array.from({ length: 14 }, (_, i) => grams(`t${String.fromCharCode(97 + i)}x`));
    const rank = (t: string) => terms.findIndex((term) => term.includes(t));
    const chosen = chooseGrams(terms, rank);
    expect(chosen).toHaveLength(10);
    // One gram from each of the ten rarest terms, none from the others.
    expect(chosen.map(rank).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe("versions and settings", () => {
  it.each([
    ["1.11.3", false],
    ["1.17.9", false],
    ["1.18.0", true],
    ["1.26.0", true],
    ["1.30.0-rc.1", true],
    ["2.0.0", false],
    ["nonsense", false],
  ])("Meilisearch %s supported: %s", (version, supported) => {
    expect(supportedVersion(version)).toBe(supported);
  });

  it("reads back the settings that matter, in any order, and names what differs", () => {
    const wanted = {
      searchableAttributes: ["grams"],
      filterableAttributes: ["ms"],
      sortableAttributes: ["ms"],
      typoTolerance: { enabled: false, minWordSizeForTypos: { oneTypo: 5, twoTypos: 9 } },
      rankingRules: ["sort", "words", "exactness"],
      pagination: { maxTotalHits: CANDIDATES + 1 },
      stopWords: [],
    };
    expect(settingsDiff(wanted)).toEqual([]);
    // An index the worker created by writing to it: Meilisearch's defaults.
    expect(
      settingsDiff({
        searchableAttributes: ["*"],
        filterableAttributes: [],
        sortableAttributes: [],
        typoTolerance: { enabled: true },
        rankingRules: ["words", "typo", "proximity", "attribute", "sort", "exactness"],
        pagination: { maxTotalHits: 1000 },
      }),
    ).toEqual([
      "searchableAttributes",
      "rankingRules",
      "filterableAttributes",
      "sortableAttributes",
      "typoTolerance",
      "pagination",
    ]);
  });
});

describe("the completeness marker", () => {
  const marker = { generation: "g1", folding: FOLDING_VERSION };

  it("is complete only when the index and PostgreSQL name the same rebuild, folded as this code folds", () => {
    expect(completeness({ state: "present", marker, wrongSettings: [] }, marker)).toEqual({ complete: true });
    expect(
      completeness({ state: "present", marker, wrongSettings: [] }, { ...marker, generation: "g0" }),
    ).toMatchObject({
      complete: false,
      fix: "operator",
      answers: true,
    });
    expect(completeness({ state: "present", marker, wrongSettings: [] }, undefined)).toMatchObject({
      complete: false,
      fix: "operator",
    });
  });

  it("an index that is missing, or has no marker, or an older folding, is rebuilt by an instance itself", () => {
    for (const condition of [
      { state: "missing" as const },
      { state: "present" as const, wrongSettings: [] },
      { state: "present" as const, marker: { generation: "g1", folding: FOLDING_VERSION - 1 }, wrongSettings: [] },
    ])
      expect(completeness(condition, marker)).toMatchObject({ complete: false, fix: "rebuild", answers: true });
  });

  it("an index whose settings were changed behind Murmur's back gets them again", () => {
    expect(completeness({ state: "present", marker, wrongSettings: ["pagination"] }, marker)).toMatchObject({
      complete: false,
      fix: "settings",
      reason: expect.stringContaining("pagination"),
    });
  });

  it("a Meilisearch that does not answer or refuses the key is not ready; an unsupported version is PostgreSQL alone", () => {
    expect(completeness({ state: "unreachable", detail: "down" }, marker)).toMatchObject({ answers: false });
    expect(completeness({ state: "refused", detail: "bad key" }, marker)).toMatchObject({ answers: false });
    expect(completeness({ state: "unsupported", detail: "1.11" }, marker)).toMatchObject({
      complete: false,
      answers: true,
      fix: "operator",
    });
  });
});
