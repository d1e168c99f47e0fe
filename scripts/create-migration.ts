// `npm run db:migrate:create -- <name>`: writes prisma/migrations/<timestamp>_<name>/migration.sql,
// the SQL that takes the committed migrations to prisma/schema.prisma. It drives Prisma's own
// WASM schema engine (what `prisma migrate dev --create-only` does with the native engine, which
// cannot be downloaded here) on a throwaway embedded PostgreSQL used as the shadow database.
// Where the native engine is installed, `npx prisma migrate dev` works as usual.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import * as bindings from "@prisma/schema-engine-wasm/schema_engine_bg";
import { EmbeddedPostgres } from "../src/db/embedded-postgres.ts";
import { migrationsDir, readMigrations } from "../src/db/migrate.ts";

// The package imports its .wasm the way bundlers do; Node needs it instantiated by hand.
async function loadSchemaEngine(): Promise<typeof bindings.SchemaEngine> {
  // Where the engine writes its panic message, as Prisma's CLI sets up.
  const panic = {
    message: "",
    set_message(m: string) {
      panic.message = `RuntimeError: ${m}`;
    },
  };
  (globalThis as Record<string, unknown>).PRISMA_WASM_PANIC_REGISTRY = panic;
  process.on("exit", () => panic.message && console.error(panic.message));
  const wasmUrl = new URL("schema_engine_bg.wasm", import.meta.resolve("@prisma/schema-engine-wasm"));
  const module = await WebAssembly.compile(fs.readFileSync(wasmUrl));
  const instance = await WebAssembly.instantiate(module, {
    "./schema_engine_bg.js": bindings as unknown as WebAssembly.ModuleImports,
  });
  bindings.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  return bindings.SchemaEngine;
}

// adapter-pg rejects PostgreSQL's one-byte "char" type (OID 18), which the engine's catalog
// queries return (relkind, contype, ...) and wants typed as Character: read those columns as
// text in the driver, then report them as Character.
async function readCharAsCharacter(factory: PrismaPg): Promise<void> {
  type Field = { dataTypeID: number };
  type Queryable = {
    performIO(...args: unknown[]): Promise<{ fields: Field[]; charColumns?: number[] }>;
    queryRaw(...args: unknown[]): Promise<{ columnTypes: number[] }>;
  };
  const adapter = await factory.connect();
  let proto = Object.getPrototypeOf(adapter) as Queryable | null;
  while (proto && !Object.hasOwn(proto, "performIO")) proto = Object.getPrototypeOf(proto);
  await adapter.dispose();
  if (!proto) throw new Error("adapter-pg changed: performIO not found");
  const { performIO, queryRaw } = proto;
  let charColumns: number[] = [];
  proto.performIO = async function (this: unknown, ...args: unknown[]) {
    const result = await performIO.apply(this, args);
    charColumns = [];
    result.fields.forEach((field, i) => {
      if (field.dataTypeID === 18) {
        field.dataTypeID = 25;
        charColumns.push(i);
      }
    });
    return result;
  };
  proto.queryRaw = async function (this: unknown, ...args: unknown[]) {
    const result = await queryRaw.apply(this, args);
    for (const i of charColumns) result.columnTypes[i] = 6; // ColumnTypeEnum.Character
    return result;
  };
}

// adapter-pg runs a script by splitting it at every ";", which cuts a dollar-quoted function body
// (20261122180000_account_changes has one) in pieces: send each script whole, as one simple
// query, which PostgreSQL splits itself.
async function runScriptsWhole(factory: PrismaPg): Promise<void> {
  type Scripted = {
    executeScript(script: string): Promise<void>;
    client: { query(sql: string): Promise<unknown> };
    onError(error: unknown): never;
  };
  const adapter = await factory.connect();
  let proto = Object.getPrototypeOf(adapter) as Scripted | null;
  while (proto && !Object.hasOwn(proto, "executeScript")) proto = Object.getPrototypeOf(proto);
  await adapter.dispose();
  if (!proto) throw new Error("adapter-pg changed: executeScript not found");
  proto.executeScript = async function (this: Scripted, script: string) {
    try {
      await this.client.query(script);
    } catch (error) {
      this.onError(error);
    }
  };
}

const name = (process.argv[2] ?? "").replace(/[^A-Za-z0-9_]/g, "_");
if (!name) {
  console.error("usage: npm run db:migrate:create -- <name>");
  process.exit(2);
}

const schemaPath = path.resolve("prisma/schema.prisma");
const pgDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-migrate-"));
fs.chmodSync(pgDir, 0o755);
const cluster = new EmbeddedPostgres({ dataDir: path.join(pgDir, "pg") });
await cluster.start();
try {
  const url = new URL(cluster.url());
  // Host, port and user are passed apart: adapter-pg builds the shadow database's pool by
  // overriding `database`, which a connection string would silently win over.
  const config = {
    host: url.hostname,
    port: Number(url.port),
    user: "postgres",
    password: decodeURIComponent(url.password),
    database: "postgres",
  };
  const factory = new PrismaPg(config);
  const adapter = bindMigrationAwareSqlAdapterFactory({
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: () => factory.connect(),
    // adapter-pg drops the shadow database while its pool still holds connections: force it.
    async connectToShadowDb() {
      const admin = await factory.connect();
      const database = `shadow_${Date.now()}`;
      await admin.executeScript(`CREATE DATABASE "${database}"`);
      const shadow = await new PrismaPg({ ...config, database }).connect();
      const dispose = shadow.dispose.bind(shadow);
      shadow.dispose = async () => {
        await dispose();
        await admin.executeScript(`DROP DATABASE "${database}" WITH (FORCE)`);
        await admin.dispose();
      };
      return shadow;
    },
  });
  const SchemaEngine = await loadSchemaEngine();
  await readCharAsCharacter(factory);
  await runScriptsWhole(factory);
  const engine = await SchemaEngine.new({ datamodels: undefined }, () => {}, adapter);
  const migrations = readMigrations();
  const migrationsList = {
    baseDir: migrationsDir,
    lockfile: { path: "migration_lock.toml", content: 'provider = "postgresql"\n' },
    shadowDbInitScript: "",
    migrationDirectories: migrations.map((m) => ({
      path: m.name,
      migrationFile: { path: "migration.sql", content: { tag: "ok" as const, value: m.sql } },
    })),
  };
  const diff = await engine.diff({
    from: { tag: "migrations", ...migrationsList },
    to: { tag: "schemaDatamodel", files: [{ path: schemaPath, content: fs.readFileSync(schemaPath, "utf8") }] },
    script: true,
    exitCode: null,
    filters: { externalTables: [], externalEnums: [] },
  });
  // The engine does not see extensions in its shadow database and asks for them again each
  // time: drop the CREATE EXTENSION an earlier migration already makes.
  const earlier = migrations.map((m) => m.sql).join("\n");
  // Nor can the schema state an index on an expression, or a partial one: those made by hand in
  // a migration (named *_phrase_trgm_idx, or *_where_idx) are not the engine's to drop.
  const sql = ((diff as unknown as { stdout?: string }).stdout ?? "")
    .replace(/-- CreateExtension\n(CREATE EXTENSION IF NOT EXISTS "[^"]+";)\n*/g, (block, statement: string) =>
      earlier.includes(statement) ? "" : block,
    )
    .replace(/-- DropIndex\nDROP INDEX "[a-z_]+_(phrase_trgm|where)_idx";\n*/g, "");
  if (!sql.trim() || /^-- This is an empty migration\.\s*$/.test(sql.trim())) {
    console.log("the schema matches the migrations: nothing to write");
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(migrationsDir, `${stamp}_${name}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "migration.sql"), sql);
    fs.writeFileSync(path.join(migrationsDir, "migration_lock.toml"), 'provider = "postgresql"\n');
    console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
  }
  engine.free();
} finally {
  await cluster.stop();
  fs.rmSync(pgDir, { recursive: true, force: true });
}
