// Compiles src/ to dist/ (the options of tsconfig.build.json), so that `npm start`, `npm run cli`,
// `npm run worker` and the `murmur` bin run plain JavaScript: no TypeScript loader (tsx and its
// esbuild children) in production. Each file is emitted on its own (transpileModule: seconds, not
// the minute and the gigabyte of a whole-program compile); `npm run check` is the type check.
//
//   node scripts/build.mjs             build now (`npm run build`; postinstall)
//   node scripts/build.mjs --if-stale  build only when dist/ is missing or older than src/
//                                      (before `npm start`, `npm run cli`, `npm run worker`)
//
// A build is written beside dist/ and swapped in whole, so dist/ never holds half of one.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = path.join(root, "src");
const distDir = path.join(root, "dist");
/** Written last by a build: its mtime says when dist/ was made from src/. */
const stampFile = path.join(distDir, ".built");
/** Besides src/, what changes the output. */
const inputs = ["tsconfig.json", "tsconfig.build.json"].map((f) => path.join(root, f));

function newestInput(dir = srcDir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestInput(full));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Why dist/ must be built again, or undefined when it is current (or there is no src/ to build). */
export function staleness() {
  if (!fs.existsSync(srcDir)) return undefined; // an install of dist/ alone (the image)
  if (!fs.existsSync(stampFile)) return "dist/ is missing";
  const built = fs.statSync(stampFile).mtimeMs;
  const newest = Math.max(newestInput(), ...inputs.filter((f) => fs.existsSync(f)).map((f) => fs.statSync(f).mtimeMs));
  return newest > built ? "src/ changed since dist/ was built" : undefined;
}

function loadTypeScript() {
  try {
    return createRequire(path.join(root, "package.json"))("typescript");
  } catch {
    return undefined;
  }
}

/** Compiles every file of src/ into a fresh dist/. Returns how many files it wrote. */
export function build() {
  const ts = loadTypeScript();
  if (!ts) throw new Error("TypeScript is not installed (a production install): `npm install` first");
  const configFile = path.join(root, "tsconfig.build.json");
  const read = ts.readConfigFile(configFile, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configFile);
  if (parsed.errors.length) {
    throw new Error(parsed.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")).join("; "));
  }
  // ES modules (package.json's "type": "module"): a file transpiled alone cannot look that up,
  // and NodeNext would take it for CommonJS.
  const options = {
    ...parsed.options,
    noEmit: false,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
  };
  const partial = `${distDir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  let written = 0;
  for (const file of parsed.fileNames) {
    if (file.endsWith(".d.ts")) continue;
    const out = path.join(partial, path.relative(srcDir, file)).replace(/\.ts$/, ".js");
    const { outputText, diagnostics } = ts.transpileModule(fs.readFileSync(file, "utf8"), {
      compilerOptions: options,
      fileName: file,
      reportDiagnostics: true,
    });
    if (diagnostics?.length) {
      const [d] = diagnostics;
      throw new Error(`${path.relative(root, file)}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    }
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, outputText);
    written += 1;
  }
  fs.writeFileSync(path.join(partial, ".built"), `${new Date().toISOString()}\n`);
  // Swap: the old dist/ aside, the new one in, the old one gone.
  const old = `${distDir}.old-${process.pid}`;
  try {
    if (fs.existsSync(distDir)) fs.renameSync(distDir, old);
    fs.renameSync(partial, distDir);
  } catch (err) {
    // Another build swapped its own in meanwhile: it is as new as this one.
    if (!fs.existsSync(path.join(distDir, ".built"))) throw err;
    fs.rmSync(partial, { recursive: true, force: true });
  }
  fs.rmSync(old, { recursive: true, force: true });
  return written;
}

/**
 * Builds when dist/ is missing or stale. Without TypeScript (a production install) a stale dist/
 * runs as it is, said once on stderr; a missing one is an error.
 */
export function ensureBuilt() {
  const why = staleness();
  if (!why) return;
  if (!loadTypeScript()) {
    if (!fs.existsSync(stampFile)) {
      throw new Error("dist/ is missing and TypeScript is not installed to build it: run `npm install`");
    }
    console.error(`murmur: ${why}, but TypeScript is not installed to build it again: running dist/ as it is`);
    return;
  }
  const began = Date.now();
  const written = build();
  console.error(`murmur: ${why}: compiled ${written} files to dist/ in ${Date.now() - began} ms`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  try {
    if (process.argv.includes("--if-stale")) ensureBuilt();
    else {
      const began = Date.now();
      console.error(`compiled ${build()} files to dist/ in ${Date.now() - began} ms`);
    }
  } catch (err) {
    console.error(`murmur: build failed: ${err instanceof Error ? err.message : err}`);
    process.exit(1);
  }
}
