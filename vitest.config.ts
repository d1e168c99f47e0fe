import { defineConfig } from "vitest/config";

/**
 * Files that must have a process of their own: test/federation-expanded-once.test.ts counts
 * jsonld.js's expansions before and after Murmur wraps them, once a process.
 */
const ISOLATED = ["test/federation-expanded-once.test.ts"];

export default defineConfig({
  // graphql 16 ships CommonJS for Node and .mjs for bundlers; Pothos and yoga load the former,
  // so the tests must too, or two copies of graphql meet.
  resolve: { alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }] },
  test: {
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
    projects: [
      {
        extends: true,
        // A worker's files share its modules, loaded once: loaded again for each of 141 files, the
        // suite spent 324 s importing (summed over both workers) and 623 s in all, against 20 s
        // and 397 s shared. Each file still has a database and servers of its own.
        test: { name: "suite", include: ["test/**/*.test.ts"], exclude: ISOLATED, isolate: false },
      },
      { extends: true, test: { name: "isolated", include: ISOLATED } },
    ],
  },
});
