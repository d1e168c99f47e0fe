// `restore <file>`: loads an archive of `backup` (src/cli/backup.ts) into a database that is
// empty or freshly migrated to the archive's migrations, in one transaction: all of it or
// nothing. Triggers are off while it loads (session_replication_role = replica): the counters
// they keep (reaction counts) come from the archive as they were, and are not counted again;
// foreign keys are not checked row by row either, the snapshot having been consistent. The
// migrations this installation has beyond the archive's are applied after.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable, type Writable } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { SingleBar } from "cli-progress";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import * as tar from "tar-stream";
import { migrate, readMigrations } from "../db/migrate.ts";
import type { Storage } from "../storage/storage.ts";
import { BACKUP_FORMAT, BACKUP_VERSION, countLines, type Manifest } from "./backup.ts";

/** The restore was refused before anything was written; the message says why, in one line. */
export class RestoreRefused extends Error {}

export interface RestoreReport {
  manifest: Manifest;
  rows: number;
  filesWritten: number;
  /** Migrations applied after the load (this installation's newer ones). */
  migrated: string[];
  missing: string[];
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
const TABLE_ENTRY = /^tables\/([A-Za-z0-9_]+)\.[0-9]+$/;
const FILE_ENTRY = /^files\/([0-9A-Za-z_-][0-9A-Za-z._-]{0,99})$/;

async function readManifest(entry: AsyncIterable<unknown>, file: string): Promise<Manifest> {
  const chunks: Buffer[] = [];
  for await (const chunk of entry) chunks.push(chunk as Buffer);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Manifest;
  } catch {
    throw new RestoreRefused(`${file} is not a Murmur backup (its manifest is not JSON)`);
  }
  if (manifest.format !== BACKUP_FORMAT) throw new RestoreRefused(`${file} is not a Murmur backup`);
  if (manifest.version > BACKUP_VERSION) {
    throw new RestoreRefused(`${file} is a backup of format ${manifest.version}; this Murmur reads ${BACKUP_VERSION}`);
  }
  return manifest;
}

/** The archive's migrations must be this installation's first ones, unchanged. */
function checkMigrations(manifest: Manifest): void {
  const known = readMigrations();
  manifest.migrations.forEach((m, i) => {
    const here = known[i];
    if (!here || here.name !== m.name || here.checksum !== m.checksum) {
      throw new RestoreRefused(
        `the backup was made with migration ${m.name}, which this Murmur does not have as it is: restore it with Murmur ${manifest.murmurVersion}`,
      );
    }
  });
}

/** Where the target stands: refused unless empty, or migrated exactly as the archive was. */
async function prepareTarget(client: pg.Client, databaseUrl: string, manifest: Manifest): Promise<void> {
  const { rows: exists } = await client.query<{ t: string | null }>(`SELECT to_regclass('"_prisma_migrations"') AS t`);
  const applied = exists[0].t
    ? (
        await client.query<{ name: string }>(
          `SELECT migration_name AS name FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY migration_name`,
        )
      ).rows.map((r) => r.name)
    : [];
  const wanted = manifest.migrations.map((m) => m.name);
  const last = wanted[wanted.length - 1];
  if (applied.length === 0) {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'",
    );
    if (rows[0].n > 0) {
      throw new RestoreRefused("the database has tables but no Murmur migrations: restore into an empty database");
    }
    if (last) await migrate(databaseUrl, last);
    return;
  }
  if (applied.join() !== wanted.join()) {
    throw new RestoreRefused(
      `the database is at migration ${applied[applied.length - 1]}, the backup at ${last}: restore into an empty database (a new DATA_DIR, or a new database for DATABASE_URL)`,
    );
  }
}

/** The archive opened at its first entry, its manifest read and checked against this installation. */
async function openBackup(file: string): Promise<{
  extract: tar.Extract;
  entries: ReturnType<tar.Extract[typeof Symbol.asyncIterator]>;
  manifest: Manifest;
}> {
  if (!fs.existsSync(file)) throw new RestoreRefused(`${file} does not exist`);
  const extract = tar.extract();
  // tar-stream's streams are streamx ones: Node's are piped into them, failures passed on by hand.
  const gunzip = createGunzip();
  const source = fs.createReadStream(file);
  source.on("error", (err) => gunzip.destroy(err));
  gunzip.on("error", (err) => extract.destroy(err));
  source.pipe(gunzip).pipe(extract);
  const entries = extract[Symbol.asyncIterator]();
  try {
    const first = await entries.next().catch(() => ({ done: true as const, value: undefined }));
    if (first.done || first.value.header.name !== "manifest.json") {
      throw new RestoreRefused(`${file} is not a Murmur backup (no manifest first)`);
    }
    const manifest = await readManifest(first.value, file);
    checkMigrations(manifest);
    return { extract, entries, manifest };
  } catch (err) {
    extract.destroy();
    throw err;
  }
}

/**
 * The archive's manifest, if this installation can restore it (RestoreRefused otherwise): the CLI
 * asks before it starts a database, so that a wrong file makes no cluster.
 */
export async function inspectBackup(file: string): Promise<Manifest> {
  const { extract, manifest } = await openBackup(file);
  extract.destroy();
  return manifest;
}

export async function restoreDatabase(options: {
  databaseUrl: string;
  storage: Storage;
  file: string;
  force?: boolean;
  progress?: boolean;
}): Promise<RestoreReport> {
  const { storage, file } = options;
  const { extract, entries, manifest } = await openBackup(file);
  const tables = new Map(manifest.tables.map((t) => [t.name, t]));

  const client = new pg.Client({ connectionString: options.databaseUrl, application_name: "murmur restore" });
  await client.connect();
  const written: string[] = [];
  const bar = options.progress
    ? new SingleBar({ format: "restore [{bar}] {percentage}% | {value}/{total} rows and files | {stage}" })
    : undefined;
  let inTransaction = false;
  try {
    await prepareTarget(client, options.databaseUrl, manifest);
    await client.query("BEGIN");
    inTransaction = true;
    await client.query("SET LOCAL session_replication_role = replica").catch((err: Error) => {
      throw new RestoreRefused(`restore turns triggers off, which needs a superuser: ${err.message}`);
    });
    const filled: string[] = [];
    for (const table of manifest.tables) {
      const { rows } = await client.query<{ any: boolean }>(`SELECT EXISTS (SELECT FROM ${quote(table.name)}) AS any`);
      if (rows[0].any) filled.push(table.name);
    }
    if (filled.length && !options.force) {
      const named = filled.includes("accounts") ? "accounts" : filled.slice(0, 3).join(", ");
      throw new RestoreRefused(
        `the database already has data (${named}): restore into an empty database, or add --force to replace what it holds`,
      );
    }
    if (filled.length) await client.query(`TRUNCATE ${manifest.tables.map((t) => quote(t.name)).join(", ")}`);

    const total = manifest.tables.reduce((sum, t) => sum + t.rows, 0);
    bar?.start(total + manifest.files.objects, 0, { stage: "" });
    let done = 0;
    const loaded = new Map<string, number>();
    // The COPY under way: a table's chunks follow each other.
    let copy: { table: string; stream: Writable; rows: number; failed?: Error } | undefined;
    const endCopy = async () => {
      if (!copy) return;
      const { table, stream, failed } = copy;
      if (failed) throw failed;
      stream.end();
      await finished(stream);
      loaded.set(table, copy.rows);
      copy = undefined;
    };
    let missing: string[] = [];
    for (;;) {
      const next = await entries.next();
      if (next.done) break;
      const entry = next.value;
      const name = entry.header.name;
      const tableName = TABLE_ENTRY.exec(name)?.[1];
      if (tableName !== undefined) {
        const table = tables.get(tableName);
        if (!table) throw new Error(`${file}: ${name} is no table of its manifest`);
        if (copy?.table !== tableName) {
          await endCopy();
          if (loaded.has(tableName)) throw new Error(`${file}: table ${tableName} comes twice`);
          bar?.update(done, { stage: tableName });
          const columns = table.columns.map(quote).join(", ");
          const stream = client.query(copyFrom(`COPY ${quote(tableName)} (${columns}) FROM STDIN`));
          const started: NonNullable<typeof copy> = { table: tableName, stream, rows: 0 };
          stream.on("error", (err) => {
            started.failed = err;
          });
          copy = started;
        }
        const target = copy as NonNullable<typeof copy>;
        for await (const chunk of entry as AsyncIterable<Buffer>) {
          if (target.failed) throw target.failed;
          const lines = countLines(chunk);
          target.rows += lines;
          done += lines;
          if (!target.stream.write(chunk)) {
            await new Promise<void>((resolve) => {
              const go = () => {
                target.stream.off("drain", go);
                target.stream.off("error", go);
                resolve();
              };
              target.stream.on("drain", go);
              target.stream.on("error", go);
            });
          }
        }
        bar?.update(done);
        continue;
      }
      await endCopy();
      const key = FILE_ENTRY.exec(name)?.[1];
      if (key !== undefined) {
        bar?.update(done, { stage: "files" });
        const scratch = path.join(storage.scratchDir, `restore-${randomBytes(8).toString("hex")}`);
        await pipeline(Readable.from(entry), fs.createWriteStream(scratch, { mode: 0o600 }));
        const replaced = await storage.exists(key);
        await storage.putFile(key, scratch);
        if (!replaced) written.push(key);
        bar?.update(++done);
      } else if (name.startsWith("s3-keys.")) {
        for await (const chunk of entry as AsyncIterable<Buffer>) done += countLines(chunk);
        bar?.update(done, { stage: "files" });
      } else if (name === "files-missing.json") {
        const chunks: Buffer[] = [];
        for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
        missing = JSON.parse(Buffer.concat(chunks).toString("utf8")) as string[];
      } else {
        entry.resume(); // a later format's entry: not ours to read
      }
    }
    await endCopy();
    for (const table of manifest.tables) {
      const rows = loaded.get(table.name) ?? 0;
      if (rows !== table.rows) {
        throw new Error(`${file} is cut short: table ${table.name} has ${rows} of its ${table.rows} rows`);
      }
    }
    for (const s of manifest.sequences) {
      await client.query("SELECT setval(pg_get_serial_sequence($1, $2), $3::bigint)", [
        quote(s.table),
        s.column,
        s.value,
      ]);
    }
    await client.query("COMMIT");
    inTransaction = false;
    // Statistics for the planner at once, rather than when autovacuum comes by.
    bar?.update(done, { stage: "analyze" });
    await client.query("ANALYZE");
    bar?.update(done, { stage: "done" });
    bar?.stop();
    const migrated = await migrate(options.databaseUrl);
    return { manifest, rows: total, filesWritten: written.length, migrated, missing };
  } catch (err) {
    bar?.stop();
    if (inTransaction) await client.query("ROLLBACK").catch(() => {});
    // Nothing half-written: the objects a restore that did not happen added go too.
    for (const key of written) await storage.delete(key).catch(() => {});
    throw err;
  } finally {
    extract.destroy();
    await client.end().catch(() => {});
  }
}
