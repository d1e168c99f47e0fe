// A PostgreSQL of its own with a real streaming replica, for the read-replica tests
// (docs/fleet.md#read-replicas). The embedded packages ship no pg_basebackup: the primary is
// migrated, stopped and its data folder copied; the copy starts as a hot standby (standby.signal)
// streaming from the primary, applying each transaction `delayMs` after its commit, so a read sent
// to the wrong place shows.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureDatabase } from "../../src/db/database.ts";
import { EmbeddedPostgres } from "../../src/db/embedded-postgres.ts";
import { migrate } from "../../src/db/migrate.ts";
import { freePort } from "./net.ts";

export interface ReplicatedDatabase {
  primaryUrl: string;
  replicaUrl: string;
  stopReplica(): Promise<void>;
  stop(): Promise<void>;
}

const DATABASE = "murmur";

export async function startReplicatedDatabase(delayMs: number): Promise<ReplicatedDatabase> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-replicated-"));
  fs.chmodSync(dir, 0o755); // PostgreSQL runs as the postgres user when the tests run as root
  const primaryDir = path.join(dir, "primary");
  const replicaDir = path.join(dir, "replica");
  const primary = new EmbeddedPostgres({ dataDir: primaryDir, port: await freePort() });
  let replica: EmbeddedPostgres | undefined;
  try {
    await primary.start();
    await ensureDatabase(primary.url(), DATABASE);
    await migrate(primary.url(DATABASE));
    await primary.stop();
    // `cp -a` keeps the postgres user's ownership and the folder's modes.
    execFileSync("cp", ["-a", primaryDir, replicaDir]);
    fs.copyFileSync(`${primaryDir}.password`, `${replicaDir}.password`);
    fs.writeFileSync(path.join(replicaDir, "standby.signal"), "");
    const owner = fs.statSync(replicaDir);
    fs.chownSync(path.join(replicaDir, "standby.signal"), owner.uid, owner.gid);
    await primary.start();
    const { hostname, port, username, password } = new URL(primary.url());
    replica = new EmbeddedPostgres({
      dataDir: replicaDir,
      settings: {
        primary_conninfo: `host=${hostname} port=${port} user=${username} password=${decodeURIComponent(password)}`,
        recovery_min_apply_delay: `${delayMs}ms`,
        hot_standby: "on",
      },
    });
    await replica.start();
  } catch (err) {
    await replica?.stop();
    await primary.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const started = replica;
  return {
    primaryUrl: primary.url(DATABASE),
    replicaUrl: started.url(DATABASE),
    stopReplica: () => started.stop(),
    async stop() {
      await started.stop();
      await primary.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
