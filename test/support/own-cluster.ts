// A PostgreSQL of a test file's own, migrated, which the test may stop and start again (on the
// same port, where the server's pools look for it): for the outage tests.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureDatabase } from "../../src/db/database.ts";
import { EmbeddedPostgres } from "../../src/db/embedded-postgres.ts";
import { migrate } from "../../src/db/migrate.ts";
import { freePort } from "./net.ts";

export interface OwnCluster {
  cluster: EmbeddedPostgres;
  /** The migrated database `murmur` on it. */
  url: string;
  /** Stops it and removes its folder. */
  remove(): Promise<void>;
}

export async function startOwnCluster(name: string): Promise<OwnCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `murmur-${name}-`));
  fs.chmodSync(dir, 0o755);
  const cluster = new EmbeddedPostgres({ dataDir: path.join(dir, "pg"), port: await freePort() });
  await cluster.start();
  await ensureDatabase(cluster.url(), "murmur");
  await migrate(cluster.url("murmur"));
  return {
    cluster,
    url: cluster.url("murmur"),
    async remove() {
      await cluster.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
