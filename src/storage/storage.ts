// Where file bytes live. The domain sees only this interface, so an S3-compatible store can
// replace the local folder without touching it.
import { randomBytes } from "node:crypto";
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
  /** Moves a finished local file into the store under `key`; StoreUnavailable when the store refuses it. */
  putFile(key: string, localPath: string): Promise<void>;
  /**
   * Whether the store can take files now: its scratch folder and its own folder can be written
   * (a bucket answers). StoreUnavailable naming the place when not.
   */
  check(): Promise<void>;
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

/**
 * A place of the store (a folder, the bucket) refuses writes: a full or read-only disk, a folder
 * gone or replaced. The operator's to fix, not the client's: uploads are answered 503 meanwhile.
 */
export class StoreUnavailable extends Error {
  constructor(
    /** What cannot be written, in words: "upload scratch folder /data/files/.uploads". */
    readonly place: string,
    readonly cause: unknown,
  ) {
    super(`${place} cannot be written: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "StoreUnavailable";
  }
}

/** An error of the file system itself (it has an errno code and the call that failed), not of a stream feeding it. */
export function isFileSystemError(err: unknown): err is NodeJS.ErrnoException {
  const e = err as NodeJS.ErrnoException | undefined;
  return typeof e?.code === "string" && typeof e.syscall === "string" && e.syscall !== "read";
}

/** Creates and removes a small file in `folder`: that it exists is not enough, it must take files. */
export async function probeFolder(folder: string, place: string): Promise<void> {
  const probe = path.join(folder, `.probe-${randomBytes(6).toString("hex")}`);
  try {
    await fs.writeFile(probe, "", { flag: "wx" });
    await fs.rm(probe);
  } catch (err) {
    throw new StoreUnavailable(place, err);
  }
}
