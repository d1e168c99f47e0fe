// `storage migrate`: copies every file of the local store (STORAGE_DIR) into the bucket
// (S3_BUCKET), for an operator moving from one machine to a fleet. Resumable: what the bucket
// already holds is skipped, so a run cut short is simply run again. Local files stay.
import fs from "node:fs/promises";
import path from "node:path";
import { SingleBar } from "cli-progress";
import type { Services } from "../domain/context.ts";
import { thumbnailKey } from "../domain/drive/service.ts";
import { createLocalStorage } from "../storage/local.ts";
import { MissingObject } from "../storage/storage.ts";

const BATCH = 500;

export interface MigrationReport {
  copied: number;
  skipped: number;
  /** Keys the database names but the local store lacks. */
  missing: string[];
}

export async function migrateStorage(services: Services, progress = true): Promise<MigrationReport> {
  if (!services.config.s3) throw new Error("S3_BUCKET is not set: there is no bucket to copy the files into");
  const local = await createLocalStorage(services.config.storageDir);
  const bucket = services.storage;
  const total = await services.db.driveFile.count();
  const bar = progress
    ? new SingleBar({ format: "storage migrate [{bar}] {percentage}% | {value}/{total} files | {eta_formatted} left" })
    : undefined;
  bar?.start(total, 0);
  const report: MigrationReport = { copied: 0, skipped: 0, missing: [] };
  let after = -1n;
  let done = 0;
  try {
    for (;;) {
      const files = await services.db.driveFile.findMany({
        where: { id: { gt: after } },
        orderBy: { id: "asc" },
        take: BATCH,
        select: { id: true, thumbnailSize: true },
      });
      if (files.length === 0) break;
      after = files[files.length - 1].id;
      for (const file of files) {
        const keys = [file.id.toString(), ...(file.thumbnailSize === null ? [] : [thumbnailKey(file.id)])];
        for (const key of keys) {
          if (await bucket.exists(key)) {
            report.skipped += 1;
            continue;
          }
          // A scratch copy: putFile moves its file into the store, and the local one stays.
          const copy = path.join(bucket.scratchDir, `migrate-${key}`);
          try {
            await fs.writeFile(copy, await local.open(key));
          } catch (err) {
            if (!(err instanceof MissingObject)) throw err;
            report.missing.push(key);
            continue;
          }
          await bucket.putFile(key, copy);
          report.copied += 1;
        }
        bar?.update(++done);
      }
    }
  } finally {
    bar?.stop();
  }
  return report;
}
