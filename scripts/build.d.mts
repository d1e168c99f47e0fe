// Types of scripts/build.mjs, for the TypeScript that imports it (the tests).
/** Why dist/ must be built again, or undefined when it is current. */
export function staleness(): string | undefined;
/** Compiles every file of src/ into a fresh dist/; answers how many files it wrote. */
export function build(): number;
/** Builds when dist/ is missing or stale. */
export function ensureBuilt(): void;
