// Where file bytes live. The domain sees only this interface, so an S3-compatible store can
// replace the local folder without touching it.
import fs from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";

const SCRATCH_MAX_AGE_MS = 60 * 60 * 1000;

/**
 * Makes the folder uploads arrive in. Uploads cut short by a crash left files there nothing
 * refers to; only old ones go: another process (the CLI beside a running server) may be
 * receiving uploads right now.
 */
export async function prepareScratch(scratchDir: string): Promise<void> {
  await fs.mkdir(scratchDir, { recursive: true });
  const stale = Date.now() - SCRATCH_MAX_AGE_MS;
  for (const name of await fs.readdir(scratchDir)) {
    const file = path.join(scratchDir, name);
    const stat = await fs.stat(file).catch(() => undefined);
    if (stat && stat.mtimeMs < stale) await fs.rm(file, { recursive: true, force: true });
  }
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface Storage {
  /** A local folder for uploads in progress; files there are moved in by putFile. */
  readonly scratchDir: string;
  /** Moves a finished local file into the store under `key`. */
  putFile(key: string, localPath: string): Promise<void>;
  /** The object's bytes, or the given range of them; MissingObject when there is no such object. */
  open(key: string, range?: ByteRange): Promise<Readable>;
  /** Whether there is an object under `key`. */
  exists(key: string): Promise<boolean>;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
}

/** The store has no object under a key (its bytes lost, or never written). */
export class MissingObject extends Error {
  constructor(key: string) {
    super(`no stored object ${key}`);
  }
}
