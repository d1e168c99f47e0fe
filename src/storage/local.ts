// Storage in a local folder (STORAGE_DIR): objects under a two-level fan-out by key.
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { ByteRange, Storage } from "./storage.ts";

const KEY = /^[0-9A-Za-z._-]{1,100}$/;
const SCRATCH_MAX_AGE_MS = 60 * 60 * 1000;

export async function createLocalStorage(root: string): Promise<Storage> {
  const scratchDir = path.join(root, ".uploads");
  await fs.mkdir(scratchDir, { recursive: true });
  // Uploads cut short by a crash left scratch files nothing refers to. Only old ones go: another
  // process (the CLI beside a running server) may be receiving uploads right now.
  const stale = Date.now() - SCRATCH_MAX_AGE_MS;
  for (const name of await fs.readdir(scratchDir)) {
    const file = path.join(scratchDir, name);
    const stat = await fs.stat(file).catch(() => undefined);
    if (stat && stat.mtimeMs < stale) await fs.rm(file, { recursive: true, force: true });
  }

  const pathOf = (key: string) => {
    if (!KEY.test(key) || key.startsWith(".")) throw new Error(`bad storage key ${JSON.stringify(key)}`);
    // Fan out by the id part of the key, so `<id>.thumbnail` sits beside `<id>`.
    return path.join(root, key.split(".")[0].slice(-2).padStart(2, "0"), key);
  };

  return {
    scratchDir,
    async putFile(key, localPath) {
      const target = pathOf(key);
      await fs.mkdir(path.dirname(target), { recursive: true });
      try {
        await fs.rename(localPath, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
        await fs.copyFile(localPath, target);
        await fs.rm(localPath, { force: true });
      }
    },
    read(key, range?: ByteRange) {
      return createReadStream(pathOf(key), range ? { start: range.start, end: range.end } : {});
    },
    async delete(key) {
      await fs.rm(pathOf(key), { force: true });
    },
  };
}
