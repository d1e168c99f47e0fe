// One PostgreSQL for the whole run (embedded unless TEST_DATABASE_URL is set) and one migrated
// template database; each test file clones the template (test/support/server.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { ensureBuilt } from "../../scripts/build.mjs";
import { ensureDatabase } from "../../src/db/database.ts";
import { EmbeddedPostgres } from "../../src/db/embedded-postgres.ts";
import { migrate } from "../../src/db/migrate.ts";

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    runId: string;
  }
}

export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export default async function setup(project: TestProject) {
  // What `npm start` and the `murmur` bin run (test/start.test.ts, test/cli.test.ts): current
  // before any test file starts, so none builds it while another runs it.
  ensureBuilt();
  const runId = `${process.pid}_${Date.now().toString(36)}`;
  let adminUrl = process.env.TEST_DATABASE_URL;
  let cluster: EmbeddedPostgres | undefined;
  let dir: string | undefined;
  if (!adminUrl) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-test-"));
    fs.chmodSync(dir, 0o755);
    cluster = new EmbeddedPostgres({ dataDir: path.join(dir, "pg") });
    await cluster.start();
    adminUrl = cluster.url();
  }
  const templateDatabase = `murmur_template_${runId}`;
  await ensureDatabase(adminUrl, templateDatabase);
  await migrate(databaseUrl(adminUrl, templateDatabase));
  project.provide("adminUrl", adminUrl);
  project.provide("templateDatabase", templateDatabase);
  project.provide("runId", runId);

  return async () => {
    if (cluster) {
      await cluster.stop();
    } else if (adminUrl) {
      // A shared server: drop what this run made.
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      const { rows } = await client.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE datname LIKE $1",
        [`murmur_%${runId}%`],
      );
      for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
      await client.end();
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  };
}
