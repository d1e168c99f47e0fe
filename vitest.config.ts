import { defineConfig } from "vitest/config";

export default defineConfig({
  // graphql 16 ships CommonJS for Node and .mjs for bundlers; Pothos and yoga load the former,
  // so the tests must too, or two copies of graphql meet.
  resolve: { alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }] },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    // Two files at a time, where vitest's default on two cores is one: each file has a database of
    // its own, and much of a file's time is spent waiting (servers starting, timers, the database),
    // so the suite took 742 s one at a time and 336 s two at a time on this 2-core machine.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The suite prints what each file proves; slow files stand out.
    reporters: ["default"],
  },
});
