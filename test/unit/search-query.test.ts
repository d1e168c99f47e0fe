// The search language (docs/search.md#grammar): table-driven cases and generated ones.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.ts";
import { parseSearchQuery, printSearchQuery, type SearchNode } from "../../src/domain/search/query.ts";

const k = (text: string): SearchNode => ({ kind: "keyword", text });

describe("parse", () => {
  it.each<[string, SearchNode]>([
    ["cat", k("cat")],
    ["猫", k("猫")],
    ["cat dog", { kind: "and", items: [k("cat"), k("dog")] }],
    ["cat OR dog", { kind: "or", items: [k("cat"), k("dog")] }],
    ["cat or dog", { kind: "and", items: [k("cat"), k("or"), k("dog")] }],
    // AND binds tighter than OR.
    ["a b OR c", { kind: "or", items: [{ kind: "and", items: [k("a"), k("b")] }, k("c")] }],
    ["a (b OR c)", { kind: "and", items: [k("a"), { kind: "or", items: [k("b"), k("c")] }] }],
    ["(a)", k("a")],
    ["cat -dog", { kind: "and", items: [k("cat"), { kind: "not", item: k("dog") }] }],
    [
      "cat -(dog OR bird)",
      { kind: "and", items: [k("cat"), { kind: "not", item: { kind: "or", items: [k("dog"), k("bird")] } }] },
    ],
    ['"hello world"', { kind: "phrase", text: "hello world" }],
    ['cat -"big dog"', { kind: "and", items: [k("cat"), { kind: "not", item: { kind: "phrase", text: "big dog" } }] }],
    ["from:alice", { kind: "from", name: "alice" }],
    ["from:@alice@murmur.test", { kind: "from", name: "@alice@murmur.test" }],
    ["cat is:renote", { kind: "and", items: [k("cat"), { kind: "is", value: "renote" }] }],
    [
      "cat is:quote has:link has:media",
      {
        kind: "and",
        items: [
          k("cat"),
          { kind: "is", value: "quote" },
          { kind: "has", value: "link" },
          { kind: "has", value: "media" },
        ],
      },
    ],
    ["e-mail", k("e-mail")],
    ["https://example.com/x", k("https://example.com/x")],
    ["12:30", k("12:30")],
    ["  spaced   out  ", { kind: "and", items: [k("spaced"), k("out")] }],
    [
      "from:alice -is:renote",
      {
        kind: "and",
        items: [
          { kind: "from", name: "alice" },
          { kind: "not", item: { kind: "is", value: "renote" } },
        ],
      },
    ],
  ])("%j", (query, tree) => {
    expect(parseSearchQuery(query)).toEqual(tree);
  });

  it.each([
    ["", "empty"],
    ["   ", "blank"],
    ["x".repeat(513), "over 512 characters"],
    ["(cat", "unbalanced ("],
    ["cat)", "unbalanced )"],
    ["()", "empty group"],
    ['"cat', "unbalanced quote"],
    ['""', "empty phrase"],
    ["cat OR", "OR with nothing after"],
    ["OR cat", "OR with nothing before"],
    ["cat OR OR dog", "OR OR"],
    ["-", "lone dash"],
    ["cat -", "trailing dash"],
    ["- cat", "dash with a space"],
    ["is:renote", "no positive term"],
    ["has:media has:link", "no positive term"],
    ["-cat", "only negated"],
    ["-(cat OR dog) is:quote", "only negated"],
    ["is:reply cat", "unknown value"],
    ["has:video cat", "unknown value"],
    ["lang:en cat", "unknown operator"],
    ["from: cat", "from: with no name"],
    ["cat (dog", "unbalanced"],
  ])("refuses %j (%s) with INVALID_QUERY", (query) => {
    expect(() => parseSearchQuery(query)).toThrow(expect.objectContaining({ code: "INVALID_QUERY" }));
  });

  it("takes 512 characters and counts code points", () => {
    expect(parseSearchQuery("x".repeat(512))).toEqual(k("x".repeat(512)));
    expect(parseSearchQuery("猫".repeat(512))).toEqual(k("猫".repeat(512)));
    expect(() => parseSearchQuery("😀".repeat(513))).toThrow(DomainError);
  });
});

// Keywords the printer can write back as they are.
const keyword = fc
  .stringMatching(/^[a-z0-9猫犬ä][a-z0-9猫犬ä._-]{0,8}$/)
  .filter((t) => t !== "OR" && !/^[a-z]+:/i.test(t))
  .map((text): SearchNode => ({ kind: "keyword", text }));
const phrase = fc
  .stringMatching(/^[a-z猫 ]{0,5}[a-z猫][a-z猫 ]{0,5}$/)
  .map((text): SearchNode => ({ kind: "phrase", text }));
const from = fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/).map((name): SearchNode => ({ kind: "from", name }));
const flag = fc.constantFrom<SearchNode>(
  { kind: "is", value: "renote" },
  { kind: "is", value: "quote" },
  { kind: "has", value: "link" },
  { kind: "has", value: "media" },
);

const { tree } = fc.letrec<{ tree: SearchNode }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    keyword,
    phrase,
    from,
    flag,
    fc.record({ kind: fc.constant("not" as const), item: tie("tree") }).filter((n) => n.item.kind !== "not"),
    fc.record({ kind: fc.constant("and" as const), items: fc.array(tie("tree"), { minLength: 2, maxLength: 3 }) }),
    fc.record({ kind: fc.constant("or" as const), items: fc.array(tie("tree"), { minLength: 2, maxLength: 3 }) }),
  ),
}));

function positive(node: SearchNode, negated = false): boolean {
  if (node.kind === "and" || node.kind === "or") return node.items.some((i) => positive(i, negated));
  if (node.kind === "not") return positive(node.item, !negated);
  return ["keyword", "phrase", "from"].includes(node.kind) && !negated;
}

describe("generated queries", () => {
  it("parse back to the tree they were printed from", () => {
    fc.assert(
      fc.property(
        tree.filter((t) => positive(t) && [...printSearchQuery(t)].length <= 512),
        (t) => {
          expect(parseSearchQuery(printSearchQuery(t))).toEqual(t);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("never throw anything but INVALID_QUERY, whatever the input", () => {
    const alphabet = fc.constantFrom(...'ab猫 ()"-:ORisfromhaslinkmedia@.\t\n'.split(""), "OR", "is:", "from:", "has:");
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 512 }),
          fc.array(alphabet, { maxLength: 120 }).map((a) => a.join("").slice(0, 512)),
        ),
        (input) => {
          try {
            parseSearchQuery(input);
          } catch (err) {
            expect(err).toBeInstanceOf(DomainError);
            expect((err as DomainError).code).toBe("INVALID_QUERY");
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});
