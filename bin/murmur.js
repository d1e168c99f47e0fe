#!/usr/bin/env node
// The operator CLI as an installed command: runs the compiled CLI (dist/cli/main.js), compiling
// src/ first when dist/ is missing or older than it (a checkout edited since `npm install`).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { constants } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Started by an older Node than the one the installation brings (the shell's `node` runs this
// file; npm scripts and npx would have found node_modules/.bin/node first): run again on that one,
// the `node` dependency of package.json (README, "Run and test").
function bundledNode() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return undefined;
  try {
    const dir = path.dirname(createRequire(import.meta.url).resolve("node/package.json"));
    const bin = path.join(dir, "bin", "node");
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

const node = bundledNode();
if (node) {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
} else {
  const { ensureBuilt } = await import("../scripts/build.mjs");
  try {
    ensureBuilt();
  } catch (err) {
    console.error(`murmur: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
  await import("../dist/cli/main.js");
}
