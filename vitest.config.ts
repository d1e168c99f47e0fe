import { defineConfig } from "vitest/config";

export default defineConfig({
  // graphql 16 ships CommonJS for Node and .mjs for bundlers; Pothos and yoga load the former,
  // so the tests must too, or two copies of graphql meet.
  resolve: { alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }] },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The suite prints what each file proves; slow files stand out.
    reporters: ["default"],
  },
});
