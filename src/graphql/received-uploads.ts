// Idempotency-Key on a GraphQL multipart request: its files are received into scratch before the
// operation runs, so their SHA-256 can stand in the fingerprint; the operation then reads each
// file from that copy, as it would have read the request.
import fs from "node:fs";
import type { Readable } from "node:stream";
import { type FileUpload, Upload } from "graphql-upload-minimal";
import type { Services } from "../domain/context.ts";
import { type ReceivedUpload, receiveUpload } from "../domain/drive/service.ts";

export interface ReceivedOperation {
  /** The operation, its uploads now read from scratch. */
  body: unknown;
  /** The operation with each upload as its file's name, size and SHA-256. */
  fingerprint: unknown;
  /** Removes the scratch copies. */
  discard(): Promise<void>;
}

export async function receiveUploads(services: Services, body: unknown): Promise<ReceivedOperation> {
  const received: ReceivedUpload[] = [];
  const discard = async () => {
    await Promise.all(received.map((upload) => upload.discard()));
  };
  /** `value` with its uploads received: [the value to run, the value to fingerprint]. */
  const walk = async (value: unknown): Promise<[unknown, unknown]> => {
    if (value instanceof Upload) {
      const file = await value.promise;
      let content: Readable;
      try {
        content = file.createReadStream();
      } catch (refusal) {
        // The reader cut the file off at its size limit: the operation meets the same refusal.
        const refuse = (): Readable => {
          throw refusal;
        };
        return [copyOf(file, refuse), { upload: file.filename, refused: true }];
      }
      const upload = await receiveUpload(services, content);
      received.push(upload);
      const read = () => {
        if (upload.tooBig) throw Object.assign(new Error("file too large"), { status: 413 });
        return fs.createReadStream(upload.path);
      };
      return [copyOf(file, read), { upload: file.filename, size: upload.size, sha256: upload.sha256 }];
    }
    if (Array.isArray(value)) {
      const pairs = await Promise.all(value.map(walk));
      return [pairs.map((p) => p[0]), pairs.map((p) => p[1])];
    }
    if (value && typeof value === "object") {
      const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await walk(v)] as const));
      return [
        Object.fromEntries(entries.map(([k, p]) => [k, p[0]])),
        Object.fromEntries(entries.map(([k, p]) => [k, p[1]])),
      ];
    }
    return [value, value];
  };
  try {
    const [run, fingerprint] = await walk(body);
    return { body: run, fingerprint, discard };
  } catch (err) {
    await discard();
    throw err;
  }
}

/** An Upload like `file` whose content comes from `read`. */
function copyOf(file: FileUpload, read: () => Readable): Upload {
  const copy = new Upload() as Upload & { resolve(file: FileUpload): void };
  copy.resolve({ ...file, createReadStream: read as FileUpload["createReadStream"] });
  return copy;
}
