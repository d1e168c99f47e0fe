// The layers as README's Layout has them: GraphQL and REST are two edges over the domain,
// and what both answer with (errors, rate limits, shared views) lives in src/http. A GraphQL file
// importing REST's would tie one protocol's changes to the other.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = new URL("../../src/", import.meta.url).pathname;

/** The relative module specifiers a TypeScript file imports or re-exports, static or dynamic. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)) found.push(match[1]);
  return found;
}

/** The files under `dir` that import anything under `forbidden` (both under src/). */
function crossings(dir: string, forbidden: string): string[] {
  const found: string[] = [];
  for (const name of fs.readdirSync(path.join(SRC, dir), { recursive: true }) as string[]) {
    if (!name.endsWith(".ts")) continue;
    const file = path.join(SRC, dir, name);
    for (const spec of importsOf(file)) {
      if (!spec.startsWith(".")) continue;
      const target = path.relative(SRC, path.resolve(path.dirname(file), spec));
      if (target === forbidden || target.startsWith(`${forbidden}/`)) found.push(`${dir}/${name} imports ${spec}`);
    }
  }
  return found;
}

describe("layers", () => {
  it("no src/graphql file imports src/rest", () => {
    expect(crossings("graphql", "rest")).toEqual([]);
  });

  it("no src/http file imports src/rest or src/graphql", () => {
    expect([...crossings("http", "rest"), ...crossings("http", "graphql")]).toEqual([]);
  });
});
