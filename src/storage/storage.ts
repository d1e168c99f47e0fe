// Where file bytes live. The domain sees only this interface, so an S3-compatible store can
// replace the local folder without touching it.
import type { Readable } from "node:stream";

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
  /** The object's bytes, or the given range of them. */
  read(key: string, range?: ByteRange): Readable;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
}
