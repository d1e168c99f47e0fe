// The committed generated files match what the code generates (CI fails when one is stale).
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { generatedFiles } from "../src/generated-files.ts";

describe("generated files", () => {
  for (const [name, text] of Object.entries(generatedFiles())) {
    it(`${name} is up to date (run npm run schema)`, () => {
      expect(fs.readFileSync(new URL(`../${name}`, import.meta.url), "utf8")).toBe(text);
    });
  }
});
