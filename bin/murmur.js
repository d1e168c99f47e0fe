#!/usr/bin/env node
// The operator CLI as an installed command: runs the compiled CLI (dist/cli/main.js), compiling
// src/ first when dist/ is missing or older than it (a checkout edited since `npm install`).
import { ensureBuilt } from "../scripts/build.mjs";

try {
  ensureBuilt();
} catch (err) {
  console.error(`murmur: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
}
await import("../dist/cli/main.js");
