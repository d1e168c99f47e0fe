// Storage in an S3-compatible bucket (docs/fleet.md#object-storage; S3_BUCKET): what a fleet of
// instances shares. Uploads still arrive in a local scratch folder (the upload is checked and
// thumbnailed there); putFile then streams the file into the bucket as a multipart upload, never
// whole in memory, and removes the scratch copy. Reads are ranged GETs streamed out as they come.
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, NoSuchKey, S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import type { Config } from "../config.ts";
import {
  type ByteRange,
  MissingObject,
  prepareScratch,
  probeFolder,
  type Storage,
  StoreUnavailable,
} from "./storage.ts";

/**
 * The bucket's settings (docs/fleet.md#object-storage), and the local folder uploads arrive in
 * before it.
 */
export type S3Options = NonNullable<Config["s3"]> & { scratchDir: string };

/** Parts of a multipart upload: 5 MB (S3's least), two at a time, so an upload holds ~10 MB. */
const PART_SIZE = 5 * 1024 * 1024;
const QUEUE = 2;

export async function createS3Storage(options: S3Options): Promise<Storage> {
  await prepareScratch(options.scratchDir);
  const client = new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle,
    credentials:
      options.accessKeyId && options.secretAccessKey
        ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey }
        : undefined,
  });
  const Bucket = options.bucket;
  const storage: Storage = {
    scratchDir: options.scratchDir,
    async putFile(key, localPath) {
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body: fs.createReadStream(localPath) },
        partSize: PART_SIZE,
        queueSize: QUEUE,
        // A failed upload aborts its parts: nothing is left in the bucket.
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (err) {
        throw new StoreUnavailable(`bucket ${Bucket}`, err);
      }
      await fsp.rm(localPath, { force: true });
    },
    async check() {
      await probeFolder(options.scratchDir, `upload scratch folder ${options.scratchDir}`);
      // A key never written: any answer (no) means the bucket answers; an error that it does not.
      // Not a write: readiness is asked every few seconds, and a bucket's writes are billed.
      try {
        await storage.exists("readyz-probe");
      } catch (err) {
        throw new StoreUnavailable(`bucket ${Bucket}`, err);
      }
    },
    async open(key, range?: ByteRange) {
      try {
        const answer = await client.send(
          new GetObjectCommand({ Bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
        );
        return answer.Body as Readable;
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === "NoSuchKey") throw new MissingObject(key);
        throw err;
      }
    },
    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        return true;
      } catch (err) {
        if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw err;
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
    },
  };
  return storage;
}

/** Where uploads wait before they go to the bucket: under DATA_DIR, one folder per process's store. */
export function s3ScratchDir(dataDir: string): string {
  return path.join(dataDir, "uploads");
}
