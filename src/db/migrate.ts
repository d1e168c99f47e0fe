// Applies the committed prisma/migrations at start, exactly as `prisma migrate deploy` would:
// same `_prisma_migrations` table, same checksums, same advisory lock, so either can follow
// the other. Needed because Prisma's native schema engine cannot be downloaded everywhere.
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const migrationsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../prisma/migrations");

// The lock id Prisma's schema engine takes around migrations.
const PRISMA_ADVISORY_LOCK = 72707369;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(): Migration[] {
  if (!fs.existsSync(migrationsDir)) return [];
  return fs
    .readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(migrationsDir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/**
 * Applies every migration not yet recorded (up to `upTo`, inclusive, when given: a restore
 * loads an archive into the schema it was made with); returns the names applied.
 */
export async function migrate(databaseUrl: string, upTo?: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const { rows } = await client.query<{ migration_name: string; finished_at: Date | null }>(
      `SELECT migration_name, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const failed = rows.find((r) => r.finished_at === null);
    if (failed) throw new Error(`migration ${failed.migration_name} failed earlier; resolve it before starting`);
    const done = new Set(rows.map((r) => r.migration_name));
    for (const migration of readMigrations()) {
      if (upTo !== undefined && migration.name > upTo) break;
      if (done.has(migration.name)) continue;
      await client.query("BEGIN");
      try {
        const id = randomUUID();
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`,
          [id, migration.checksum, migration.name],
        );
        await client.query(migration.sql);
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        );
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`);
      }
      applied.push(migration.name);
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK]).catch(() => {});
    await client.end();
  }
  return applied;
}
