// Comments cite only documents inside the repository (docs/README.md): every `docs/<page>.md#<section>`
// a comment of src, test, bench, scripts or prisma names must exist, and no comment may cite the
// outside documents by number (the contract's sections, the spec's, issues) that a reader cannot open.
// README.md's and docs' own links are held to the same rule.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const TREES = ["src", "test", "bench", "scripts", "prisma"];
const SOURCE = /\.(ts|mts|mjs|sql|prisma)$/;
// Generated code copies schema.prisma's comments; the schema itself is checked.
const SKIPPED = new Set(["src/generated"]);

function files(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (SKIPPED.has(path) || entry.name === "node_modules") continue;
    if (entry.isDirectory()) out.push(...files(path));
    else if (SOURCE.test(entry.name)) out.push(path);
  }
  return out;
}

/** The comments of a file: TypeScript's parser for code, `--` lines for SQL, `//` for Prisma. */
function comments(path: string): string[] {
  const text = readFileSync(join(ROOT, path), "utf8");
  if (path.endsWith(".sql")) return text.match(/--.*$/gm) ?? [];
  if (path.endsWith(".prisma")) return text.match(/\/\/.*$/gm) ?? [];
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false);
  const found = new Map<number, string>();
  const visit = (node: ts.Node): void => {
    for (const ranges of [
      ts.getLeadingCommentRanges(text, node.getFullStart()),
      ts.getTrailingCommentRanges(text, node.getEnd()),
    ]) {
      for (const range of ranges ?? []) found.set(range.pos, text.slice(range.pos, range.end));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  visit(source.endOfFileToken);
  return [...found.values()];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replace(/ /g, "-");
}

function anchors(page: string): Set<string> {
  const text = readFileSync(join(ROOT, page), "utf8").replace(/```[\s\S]*?```/g, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1])));
}

/** Whether `docs/<page>.md[#section]` (a path from the repository's root) names what exists. */
function resolves(target: string): boolean {
  const [page, section] = target.split("#");
  if (!existsSync(join(ROOT, page))) return false;
  return section === undefined || section === "" || anchors(page).has(section);
}

// The contract by its name in capitals (with a section number or none), the spec's numbered
// sections (also as its file's, spec/api.md's), and issue numbers (with or without "#").
const CITATION = /\bCONTRACT\b|\bspec(?:\/api\.md)?(?: section)? \d|\b[Ii]ssues? #?\d/;
// Applied migrations keep the text they were applied with: Prisma checksums each migration's
// file, so these five keep their old citations; every later migration is held to the rule.
const APPLIED_WITH_CITATIONS = new Set([
  "prisma/migrations/20261124154325_reaction_counts/migration.sql",
  "prisma/migrations/20261124200000_live_events/migration.sql",
  "prisma/migrations/20261125060000_deleted_accounts_named/migration.sql",
  "prisma/migrations/20261126150000_live_journal/migration.sql",
  "prisma/migrations/20261127120000_search_outages_positions/migration.sql",
]);
const DOC_REF = /docs\/[\w./-]+\.md(?:#[\w-]+)?/g;

describe("comments cite documents inside the repository", () => {
  const all = TREES.flatMap((tree) => files(tree)).map((path) => ({ path, comments: comments(path) }));

  it("reads comments from every kind of file", () => {
    const kinds = new Set(all.filter((f) => f.comments.length > 0).map((f) => f.path.split(".").pop()));
    expect([...kinds].sort()).toEqual(expect.arrayContaining(["prisma", "sql", "ts"]));
  });

  it("every docs/<page>.md#<section> a comment names exists", () => {
    const refs = all.flatMap((f) => f.comments.flatMap((c) => [...c.matchAll(DOC_REF)].map((m) => m[0])));
    expect(refs.length).toBeGreaterThan(100);
    const broken = all.flatMap((f) =>
      f.comments.flatMap((c) =>
        [...c.matchAll(DOC_REF)].filter((m) => !resolves(m[0])).map((m) => `${f.path}: ${m[0]}`),
      ),
    );
    expect(broken).toEqual([]);
  });

  it("no comment cites CONTRACT n, spec x.y or issue n", () => {
    const left = all
      .filter((f) => !APPLIED_WITH_CITATIONS.has(f.path))
      .flatMap((f) => f.comments.filter((c) => CITATION.test(c)).map((c) => `${f.path}: ${c.match(CITATION)?.[0]}`));
    expect(left).toEqual([]);
  });
});

// This file names the forms it looks for.
const NAMES_THE_FORMS = "test/unit/docs.test.ts";

describe("strings cite documents inside the repository", () => {
  // OpenAPI's descriptions and summaries, GraphQL's, error details and test titles are read by
  // people without the outside documents, as comments are.
  const code = ["src", "test", "bench"]
    .flatMap((tree) => files(tree))
    .filter((path) => /\.(ts|mts|mjs)$/.test(path) && path !== NAMES_THE_FORMS);

  it("reads the code of every tree", () => {
    const trees = new Set(code.map((path) => path.split("/")[0]));
    expect([...trees].sort()).toEqual(["bench", "src", "test"]);
  });

  it("every docs/<page>.md#<section> their text names exists, strings' too", () => {
    const broken = code.flatMap((path) =>
      [...readFileSync(join(ROOT, path), "utf8").matchAll(DOC_REF)]
        .filter((m) => !resolves(m[0]))
        .map((m) => `${path}: ${m[0]}`),
    );
    expect(broken).toEqual([]);
  });

  it("no text of src, test or bench cites CONTRACT n, spec x.y or issue n", () => {
    const left = code.flatMap((path) =>
      readFileSync(join(ROOT, path), "utf8")
        .split("\n")
        .flatMap((line, i) => (CITATION.test(line) ? [`${path}:${i + 1}: ${line.match(CITATION)?.[0]}`] : [])),
    );
    expect(left).toEqual([]);
  });
});

describe("README and docs link what exists", () => {
  const pages = [
    "README.md",
    ...readdirSync(join(ROOT, "docs"))
      .filter((n) => n.endsWith(".md"))
      .map((n) => `docs/${n}`),
  ];

  it("every link to a docs page and section resolves", () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // a web address
        const [file, section] = target.split("#");
        const path = file === "" ? page : relative(ROOT, join(ROOT, page, "..", file));
        if (!path.startsWith("docs/") && path !== "README.md") continue;
        if (!resolves(section === undefined ? path : `${path}#${section}`)) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("README cites docs, not CONTRACT n", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toMatch(/\]\(docs\//);
    expect(readme.match(new RegExp(CITATION, "g")) ?? []).toEqual([]);
  });
});
