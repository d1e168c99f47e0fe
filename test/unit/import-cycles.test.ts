// No import circle among src/'s modules (type-only imports count): a circle is layers that lean on
// each other, as context.ts -> live/hub.ts -> the services -> context.ts did. The generated
// Prisma client is left out: its circles are Prisma's.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = new URL("../../src/", import.meta.url).pathname;

/** src/'s modules (relative to src/) and the modules of src/ each imports, re-exports or loads. */
function importGraph(src: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const name of fs.readdirSync(src, { recursive: true }) as string[]) {
    if (!name.endsWith(".ts") || name.endsWith(".d.ts") || name.startsWith("generated")) continue;
    const text = fs.readFileSync(path.join(src, name), "utf8");
    const targets: string[] = [];
    for (const [, spec] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.[^"']+)["']/g)) {
      const target = path.relative(src, path.resolve(path.dirname(path.join(src, name)), spec));
      if (!target.startsWith("generated")) targets.push(target.replace(/\.js$/, ".ts"));
    }
    graph.set(name, targets);
  }
  return graph;
}

/** The graph's circles: its strongly connected groups of more than one module, or one importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop() as string;
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)?.includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("imports", () => {
  it("form no circle in src/", () => {
    expect(circles(importGraph(SRC))).toEqual([]);
  });
});
