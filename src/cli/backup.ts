// `backup <file>`: a logical export of the database, consistent and taken while the server runs,
// with only what the embedded PostgreSQL ships (no pg_dump of its major version exists here).
// One REPEATABLE READ, READ ONLY transaction is one snapshot: every table is copied from it with
// `COPY ... TO STDOUT` into a gzipped tar, after a manifest that says what restores it (the
// migrations applied, each table's columns and rows). Files of the local store go in too; objects
// of a bucket stay there and are only named. `restore` (src/cli/restore.ts) reads it back.
//
// The archive, in order:
//   manifest.json              the Manifest below
//   tables/<table>.<n>         COPY text of each table, in chunks (a tar entry needs its size
//                              first, and a table's is known only once copied), in restore order
//   files/<key>                the local store's objects (a drive file, `<id>.thumbnail`)
//   s3-keys.<n>                with S3: the bucket's keys the database names, one a line
//   files-missing.json         keys the database named but the store no longer had (deleted
//                              while the backup ran), when there are any
import fs from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { SingleBar } from "cli-progress";
import pg from "pg";
import { to as copyTo } from "pg-copy-streams";
import * as tar from "tar-stream";
import type { Config } from "../config.ts";
import { thumbnailKey } from "../domain/drive/service.ts";
import { MissingObject, type Storage } from "../storage/storage.ts";

export const BACKUP_FORMAT = "murmur-backup";
export const BACKUP_VERSION = 1;

/** Tables of the running instances' state rather than of the data, neither saved nor restored. */
export const LEFT_OUT: Record<string, string> = {
  _prisma_migrations: "made again by applying the same migrations",
  worker_leases: "the snowflake worker ids of running instances; the migration makes the rows",
  search_index_state: "whether a Meilisearch index matches the database: after a restore it is rebuilt",
  live_events:
    "the live streams' journal, at positions of this cluster's transaction ids: a restored cluster's own start afresh",
  instance_leases: "the leases of running instances",
  search_rebuild_removes: "what a Meilisearch rebuild under way must remove: after a restore the index is rebuilt",
};

export interface Manifest {
  format: typeof BACKUP_FORMAT;
  version: number;
  createdAt: string;
  murmurVersion: string;
  postgresVersion: string;
  /** Applied when the snapshot was taken, oldest first. */
  migrations: { name: string; checksum: string }[];
  /** In an order that restores (a table after those its foreign keys name). */
  tables: { name: string; columns: string[]; rows: number }[];
  /** Sequences' positions, so that ids they give after a restore are new ones. */
  sequences: { table: string; column: string; value: string }[];
  leftOut: string[];
  files: { store: "local"; objects: number } | { store: "s3"; bucket: string; objects: number; note: string };
}

export interface BackupReport {
  manifest: Manifest;
  bytes: number;
  /** Objects of the local store copied into the archive. */
  filesCopied: number;
  missing: string[];
}

/** Entries whose data arrive in pieces of unknown total size: written as `<prefix>.<n>`. */
const CHUNK_BYTES = 4 * 1024 * 1024;
const FILE_PAGE = 1000;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

export function chunkName(prefix: string, n: number): string {
  return `${prefix}.${String(n).padStart(6, "0")}`;
}

function addEntry(pack: tar.Pack, name: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry({ name, size: data.length, mode: 0o600 }, data, (err) => (err ? reject(err) : resolve()));
  });
}

/** Counts rows of COPY text: one line a row, newlines inside values escaped as `\n`. */
export function countLines(chunk: Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

/** The schema's tables (less LEFT_OUT) in an order that restores, with their stored columns. */
async function tablesOf(client: pg.Client): Promise<{ name: string; columns: string[] }[]> {
  const { rows: tables } = await client.query<{ name: string; columns: string[] }>(`
    SELECT c.relname AS name,
           array_agg(a.attname::text ORDER BY a.attnum) AS columns
    FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    GROUP BY c.relname
    ORDER BY c.relname`);
  const { rows: references } = await client.query<{ child: string; parent: string }>(`
    SELECT DISTINCT child.relname AS child, parent.relname AS parent
    FROM pg_constraint k
    JOIN pg_class child ON child.oid = k.conrelid
    JOIN pg_class parent ON parent.oid = k.confrelid
    WHERE k.contype = 'f' AND child.relnamespace = current_schema()::regnamespace AND child.oid <> parent.oid`);
  const kept = tables.filter((t) => !(t.name in LEFT_OUT));
  // Depth-first: each table after every table it references (a cycle, if any, is broken by name).
  const parents = new Map<string, string[]>();
  for (const { child, parent } of references) parents.set(child, [...(parents.get(child) ?? []), parent]);
  const byName = new Map(kept.map((t) => [t.name, t]));
  const ordered: { name: string; columns: string[] }[] = [];
  const seen = new Set<string>();
  const visit = (name: string) => {
    const table = byName.get(name);
    if (!table || seen.has(name)) return;
    seen.add(name);
    for (const parent of (parents.get(name) ?? []).sort()) visit(parent);
    ordered.push(table);
  };
  for (const t of kept) visit(t.name);
  return ordered;
}

async function sequencesOf(client: pg.Client): Promise<Manifest["sequences"]> {
  const { rows } = await client.query<{ table: string; column: string; value: string | null }>(`
    SELECT t.relname AS table, a.attname AS column, s.last_value::text AS value
    FROM pg_depend d
    JOIN pg_class seq ON seq.oid = d.objid AND seq.relkind = 'S'
    JOIN pg_class t ON t.oid = d.refobjid
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
    JOIN pg_sequences s ON s.schemaname = current_schema() AND s.sequencename = seq.relname
    WHERE t.relnamespace = current_schema()::regnamespace AND d.deptype IN ('a', 'i')
    ORDER BY 1, 2`);
  return rows
    .filter((r): r is { table: string; column: string; value: string } => r.value !== null)
    .filter((r) => !(r.table in LEFT_OUT));
}

export async function backupDatabase(options: {
  config: Config;
  databaseUrl: string;
  storage: Storage;
  file: string;
  murmurVersion: string;
  progress?: boolean;
}): Promise<BackupReport> {
  const { config, storage } = options;
  const partial = `${options.file}.partial`;
  const client = new pg.Client({ connectionString: options.databaseUrl, application_name: "murmur backup" });
  await client.connect();
  const pack = tar.pack();
  const gzip = createGzip();
  // tar-stream's streams are streamx ones: piped into Node's, not put in a Node pipeline.
  pack.on("error", (err: Error) => gzip.destroy(err));
  pack.pipe(gzip);
  const written = pipeline(gzip, fs.createWriteStream(partial, { mode: 0o600 }));
  // A failure on the writing side (a full disk) ends the copy too.
  let writeFailed: unknown;
  written.catch((err) => {
    writeFailed = err;
  });
  const bar = options.progress
    ? new SingleBar({ format: "backup [{bar}] {percentage}% | {value}/{total} rows and files | {stage}" })
    : undefined;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    const { rows: schema } = await client.query<{ t: string | null }>(
      `SELECT to_regclass('"_prisma_migrations"') AS t`,
    );
    if (!schema[0].t) throw new Error("the database has no Murmur schema (no migrations applied): nothing to back up");
    const { rows: migrations } = await client.query<{ name: string; checksum: string }>(`
      SELECT migration_name AS name, checksum FROM "_prisma_migrations"
      WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`);
    const tables = await tablesOf(client);
    const counted: Manifest["tables"] = [];
    for (const table of tables) {
      const { rows } = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${quote(table.name)}`);
      counted.push({ ...table, rows: Number(rows[0].n) });
    }
    const { rows: objectCount } = await client.query<{ n: string }>(
      "SELECT (count(*) + count(thumbnail_size))::text AS n FROM drive_files",
    );
    const objects = Number(objectCount[0].n);
    const { rows: version } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    const manifest: Manifest = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      createdAt: new Date().toISOString(),
      murmurVersion: options.murmurVersion,
      postgresVersion: version[0].v,
      migrations,
      tables: counted,
      sequences: await sequencesOf(client),
      leftOut: Object.keys(LEFT_OUT),
      files: config.s3
        ? {
            store: "s3",
            bucket: config.s3.bucket,
            objects,
            note: `the objects stay in bucket ${config.s3.bucket}; this archive names their keys (s3-keys.*), not their bytes`,
          }
        : { store: "local", objects },
    };
    await addEntry(pack, "manifest.json", Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    bar?.start(counted.reduce((sum, t) => sum + t.rows, 0) + objects, 0, { stage: "" });
    let done = 0;

    for (const table of counted) {
      bar?.update(done, { stage: table.name });
      const columns = table.columns.map(quote).join(", ");
      const copy = client.query(copyTo(`COPY ${quote(table.name)} (${columns}) TO STDOUT`));
      let pending: Buffer[] = [];
      let size = 0;
      let n = 0;
      let rows = 0;
      const flush = async () => {
        if (!size) return;
        const data = Buffer.concat(pending, size);
        pending = [];
        size = 0;
        await addEntry(pack, chunkName(`tables/${table.name}`, ++n), data);
      };
      for await (const chunk of copy as AsyncIterable<Buffer>) {
        if (writeFailed) throw writeFailed;
        pending.push(chunk);
        size += chunk.length;
        const lines = countLines(chunk);
        rows += lines;
        done += lines;
        if (size >= CHUNK_BYTES) {
          await flush();
          bar?.update(done);
        }
      }
      await flush();
      // The same snapshot counted them: anything else is a bug, not a race.
      if (rows !== table.rows) throw new Error(`table ${table.name}: ${rows} rows copied, ${table.rows} counted`);
    }

    // The snapshot names the objects; their bytes never change once stored, so they are read
    // after it (still inside it, paged, so that a million files is no million-element list).
    const missing: string[] = [];
    let filesCopied = 0;
    let keyChunk: string[] = [];
    let keyChunks = 0;
    let after = "-1";
    bar?.update(done, { stage: "files" });
    for (;;) {
      const { rows: page } = await client.query<{ id: string; size: string; thumbnail_size: number | null }>(
        "SELECT id::text, size::text, thumbnail_size FROM drive_files WHERE id > $1 ORDER BY id LIMIT $2",
        [after, FILE_PAGE],
      );
      if (!page.length) break;
      after = page[page.length - 1].id;
      for (const file of page) {
        const id = BigInt(file.id);
        const keys: [string, number][] = [[file.id, Number(file.size)]];
        if (file.thumbnail_size !== null) keys.push([thumbnailKey(id), file.thumbnail_size]);
        for (const [key, bytes] of keys) {
          if (writeFailed) throw writeFailed;
          if (config.s3) {
            keyChunk.push(key);
          } else {
            const source = await storage.open(key).catch((err) => {
              if (err instanceof MissingObject) return undefined;
              throw err;
            });
            if (!source) missing.push(key);
            else {
              await new Promise<void>((resolve, reject) => {
                // tar-stream fails the entry when the bytes are not `size` long.
                const entry = pack.entry({ name: `files/${key}`, size: bytes, mode: 0o600 }, (err) =>
                  err ? reject(err) : resolve(),
                );
                source.once("error", reject);
                source.pipe(entry);
              });
              filesCopied++;
            }
          }
          bar?.update(++done);
        }
      }
      if (keyChunk.length >= 100_000) {
        await addEntry(pack, chunkName("s3-keys", ++keyChunks), Buffer.from(`${keyChunk.join("\n")}\n`));
        keyChunk = [];
      }
    }
    if (keyChunk.length) {
      await addEntry(pack, chunkName("s3-keys", ++keyChunks), Buffer.from(`${keyChunk.join("\n")}\n`));
    }
    await client.query("COMMIT");
    if (missing.length) await addEntry(pack, "files-missing.json", Buffer.from(JSON.stringify(missing)));
    pack.finalize();
    await written;
    fs.renameSync(partial, options.file);
    return { manifest, bytes: fs.statSync(options.file).size, filesCopied, missing };
  } catch (err) {
    pack.destroy();
    await written.catch(() => {});
    fs.rmSync(partial, { force: true });
    throw err;
  } finally {
    bar?.stop();
    await client.end().catch(() => {});
  }
}
