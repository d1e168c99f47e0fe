// Brings up the database the server runs on: DATABASE_URL, or an embedded PostgreSQL under
// <DATA_DIR>/pg, then applies pending migrations.
import path from "node:path";
import pg from "pg";
import type { Config } from "../config.ts";
import { EmbeddedPostgres, type EmbeddedPostgresOptions } from "./embedded-postgres.ts";
import { migrate } from "./migrate.ts";

export interface Database {
  url: string;
  /** Stops the embedded PostgreSQL, if one was started. */
  stop(): Promise<void>;
}

const EMBEDDED_DATABASE = "murmur";

export interface StartOptions {
  /** false: leave the schema as it is (backup and restore see to it themselves). */
  migrate?: boolean;
  /** The server's way with the embedded PostgreSQL: see EmbeddedPostgresOptions. */
  exclusive?: boolean;
  onExit?: EmbeddedPostgresOptions["onExit"];
  restart?: EmbeddedPostgresOptions["restart"];
}

export async function startDatabase(
  config: Config,
  log: (message: string) => void,
  options: StartOptions = {},
): Promise<Database> {
  const migrating = options.migrate ?? true;
  if (config.databaseUrl) {
    const applied = migrating ? await migrate(config.databaseUrl) : [];
    if (applied.length) log(`applied migrations: ${applied.join(", ")}`);
    return { url: config.databaseUrl, stop: async () => {} };
  }
  const cluster = new EmbeddedPostgres({
    dataDir: path.join(config.dataDir, "pg"),
    exclusive: options.exclusive,
    onExit: options.onExit,
    restart: options.restart,
  });
  await cluster.start();
  try {
    await ensureDatabase(cluster.url(), EMBEDDED_DATABASE);
    const url = cluster.url(EMBEDDED_DATABASE);
    const applied = migrating ? await migrate(url) : [];
    if (applied.length) log(`applied migrations: ${applied.join(", ")}`);
    return { url, stop: () => cluster.stop() };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

export async function ensureDatabase(adminUrl: string, name: string, template?: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!rowCount) {
      const from = template ? ` TEMPLATE "${template}"` : "";
      await client.query(`CREATE DATABASE "${name}"${from}`);
    }
  } finally {
    await client.end();
  }
}
