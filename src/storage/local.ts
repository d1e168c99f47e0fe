// Storage in a local folder (STORAGE_DIR): objects under a two-level fan-out by key.
import fs from "node:fs/promises";
import path from "node:path";
import {
  type ByteRange,
  isFileSystemError,
  MissingObject,
  prepareScratch,
  probeFolder,
  type Storage,
  StoreUnavailable,
} from "./storage.ts";

const KEY = /^[0-9A-Za-z._-]{1,100}$/;

export async function createLocalStorage(root: string): Promise<Storage> {
  const scratchDir = path.join(root, ".uploads");
  await prepareScratch(scratchDir);

  const pathOf = (key: string) => {
    if (!KEY.test(key) || key.startsWith(".")) throw new Error(`bad storage key ${JSON.stringify(key)}`);
    // Fan out by the id part of the key, so `<id>.thumbnail` sits beside `<id>`.
    return path.join(root, key.split(".")[0].slice(-2).padStart(2, "0"), key);
  };

  return {
    scratchDir,
    async putFile(key, localPath) {
      const target = pathOf(key);
      try {
        await fs.mkdir(path.dirname(target), { recursive: true });
        try {
          await fs.rename(localPath, target);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
          await fs.copyFile(localPath, target);
          await fs.rm(localPath, { force: true });
        }
      } catch (err) {
        throw isFileSystemError(err) ? new StoreUnavailable(`storage folder ${root}`, err) : err;
      }
    },
    async check() {
      await probeFolder(scratchDir, `upload scratch folder ${scratchDir}`);
      await probeFolder(root, `storage folder ${root}`);
    },
    async open(key, range?: ByteRange) {
      // Opened before answering, so a missing file is known before any header is sent.
      const handle = await fs.open(pathOf(key), "r").catch((err: NodeJS.ErrnoException) => {
        throw err.code === "ENOENT" ? new MissingObject(key) : err;
      });
      return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
    },
    async exists(key) {
      return (await fs.stat(pathOf(key)).catch(() => undefined)) !== undefined;
    },
    async delete(key) {
      await fs.rm(pathOf(key), { force: true });
    },
  };
}
