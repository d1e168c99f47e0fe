// The drive (docs/drive.md): uploads streamed to storage, sniffed and processed,
// owner-only metadata, and the public file content behind each URL.
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { orGone } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { DriveFile } from "../../generated/prisma/client.ts";
import { type ByteRange, isFileSystemError, MissingObject, StoreUnavailable } from "../../storage/storage.ts";
import { profileChanged } from "../accounts/federation.ts";
import { checkStorable, codePoints } from "../accounts/rules.ts";
import type { Context, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { olderThan, parseBeforeId } from "../paging.ts";
import { requireAccount } from "../sessions/caller.ts";
import { inspectMedia } from "./media.ts";

export const MAX_FILE_SIZE = 104_857_600;
export const MAX_FILE_NAME = 256;
export const DRIVE_PAGE = 100;

/** An upload received into the scratch folder, not yet a drive file. */
export interface ReceivedUpload {
  path: string;
  size: number;
  /** More than MAX_FILE_SIZE bytes were sent; only the first ones were kept. */
  tooBig: boolean;
  /** SHA-256 (hex) of every byte sent, for Idempotency-Key fingerprints. */
  sha256: string;
  /** Removes the scratch file unless it became a drive file. */
  discard(): Promise<void>;
}

/**
 * Streams an upload into the scratch folder without holding it in memory. Past MAX_FILE_SIZE
 * bytes it stops writing but keeps reading, so the sender is answered, not cut off.
 */
export async function receiveUpload(services: Services, content: Readable): Promise<ReceivedUpload> {
  const file = path.join(services.storage.scratchDir, randomBytes(12).toString("hex"));
  let size = 0;
  let tooBig = false;
  const hash = createHash("sha256");
  let sha256 = "";
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      hash.update(chunk);
      if (size > MAX_FILE_SIZE) tooBig = true;
      done(null, tooBig ? undefined : chunk);
    },
  });
  const upload: ReceivedUpload = {
    path: file,
    get size() {
      return size;
    },
    get tooBig() {
      return tooBig;
    },
    get sha256() {
      sha256 ||= hash.digest("hex");
      return sha256;
    },
    discard: () => fs.rm(file, { force: true }),
  };
  try {
    await pipeline(content, limit, createWriteStream(file));
  } catch (err) {
    // In a folder that is gone there is nothing to remove: its error is not the answer's.
    await upload.discard().catch(() => {});
    // The scratch folder refused the bytes (unwritable, full): the server's fault, not the sender's.
    if (isFileSystemError(err)) {
      throw storeUnavailable(
        services,
        new StoreUnavailable(`upload scratch folder ${services.storage.scratchDir}`, err),
      );
    }
    // The multipart reader's own size limit (set just past ours) ends the stream with an error.
    if (size > MAX_FILE_SIZE || isSizeLimitError(err)) return { ...upload, tooBig: true, size };
    throw new DomainError("INVALID_REQUEST");
  }
  return upload;
}

/**
 * A store refusing writes is the operator's to fix: one line naming the place and the error, and
 * 503 SERVICE_UNAVAILABLE (with Retry-After) for the client, whose upload was fine.
 */
function storeUnavailable(services: Services, err: StoreUnavailable): DomainError {
  services.log.error(err.message);
  return new DomainError("SERVICE_UNAVAILABLE", { detail: err.message });
}

function isSizeLimitError(err: unknown): boolean {
  const e = err as { code?: string; status?: number; statusCode?: number };
  return e?.code === "FST_REQ_FILE_TOO_LARGE" || e?.status === 413 || e?.statusCode === 413;
}

export interface UploadInput {
  name?: string;
  /** `true`/`false` as sent in a form, or a boolean. */
  nsfw?: string | boolean;
  upload?: ReceivedUpload;
}

function parseNsfw(value: string | boolean | undefined): boolean {
  if (value === undefined || typeof value === "boolean") return value ?? false;
  if (value === "true" || value === "false") return value === "true";
  throw new DomainError("INVALID_REQUEST");
}

/** POST /drive: checks the upload, reads its type from its bytes, and stores it. */
export async function uploadDriveFile(ctx: Context, input: UploadInput): Promise<DriveFile> {
  const owner = requireAccount(ctx);
  const { upload } = input;
  if (!upload) throw new DomainError("INVALID_REQUEST");
  if (upload.tooBig) throw new DomainError("FILE_SIZE_TOO_BIG");
  const name = input.name ?? "";
  if (codePoints(name) > MAX_FILE_NAME) throw new DomainError("FILE_NAME_TOO_LONG");
  if (!name.trim()) throw new DomainError("INVALID_REQUEST");
  checkStorable(name);
  const nsfw = parseNsfw(input.nsfw);
  if (upload.size === 0) throw new DomainError("INVALID_REQUEST");
  return storeDriveFile(ctx, { ownerId: owner.id, name, nsfw, localPath: upload.path, size: upload.size });
}

/** An upload whose bytes come as one stream (GraphQL): checked, received, then stored. */
export async function uploadDriveFileFromStream(
  ctx: Context,
  input: { name?: string; nsfw?: boolean; open: () => Readable },
): Promise<DriveFile> {
  requireAccount(ctx); // before reading up to 100 MB
  let content: Readable;
  try {
    content = input.open();
  } catch (err) {
    // The upload reader refuses to open a file it already cut off at its size limit.
    throw new DomainError(isSizeLimitError(err) ? "FILE_SIZE_TOO_BIG" : "INVALID_REQUEST");
  }
  const upload = await receiveUpload(ctx, content);
  try {
    return await uploadDriveFile(ctx, { name: input.name, nsfw: input.nsfw, upload });
  } finally {
    await upload.discard();
  }
}

export interface StoreInput {
  /** null for the instance's own files (custom emoji images). */
  ownerId: bigint | null;
  name: string;
  nsfw: boolean;
  localPath: string;
  size: number;
}

/** Moves a checked local file into storage as a drive file, with its thumbnail. */
export async function storeDriveFile(services: Services, input: StoreInput): Promise<DriveFile> {
  const media = await inspectMedia(input.localPath);
  const id = services.ids.next();
  const keys = [id.toString(), ...(media.thumbnail ? [thumbnailKey(id)] : [])];
  try {
    await services.storage.putFile(id.toString(), input.localPath);
    if (media.thumbnail) await services.storage.putFile(thumbnailKey(id), media.thumbnail.path);
    return await services.db.driveFile.create({
      data: {
        id,
        ownerId: input.ownerId,
        name: input.name,
        mime: media.mime,
        size: BigInt(input.size),
        nsfw: input.nsfw,
        blurhash: media.blurhash,
        thumbnailSize: media.thumbnail?.size ?? null,
      },
    });
  } catch (err) {
    // Nothing half-written: no stored bytes without their row.
    await Promise.all(keys.map((key) => services.storage.delete(key).catch(() => {})));
    if (media.thumbnail) await fs.rm(media.thumbnail.path, { force: true });
    throw err instanceof StoreUnavailable ? storeUnavailable(services, err) : err;
  }
}

export function thumbnailKey(id: bigint): string {
  return `${id}.thumbnail`;
}

/** GET /drive: the caller's files, newest first; `beforeId` pages further (extension). */
/** `limit`: files per page, at most DRIVE_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
export async function listDriveFiles(ctx: Context, beforeId?: string, limit = DRIVE_PAGE): Promise<DriveFile[]> {
  const owner = requireAccount(ctx);
  return ctx.db.driveFile.findMany({
    where: { ownerId: owner.id, ...olderThan(parseBeforeId(beforeId)) },
    orderBy: { id: "desc" },
    take: Math.min(limit, DRIVE_PAGE + 1),
  });
}

/** One of the caller's files; another account's, or none, is FILE_NOT_FOUND. */
export async function getDriveFile(ctx: Context, fileId: string): Promise<DriveFile> {
  const owner = requireAccount(ctx);
  const id = parseSnowflake(fileId);
  const file = id === undefined ? null : await ctx.db.driveFile.findUnique({ where: { id } });
  if (!file || file.ownerId !== owner.id) throw new DomainError("FILE_NOT_FOUND");
  return file;
}

/**
 * The id of the caller's image file named by `fileId` (an avatar or header), null for "" (unset).
 * Another account's file, or none, is FILE_NOT_FOUND; a file that is not an image,
 * UNSUPPORTED_FILE_TYPE.
 */
export async function ownImageId(ctx: Context, ownerId: bigint, fileId: string): Promise<bigint | null> {
  if (fileId === "") return null;
  const id = parseSnowflake(fileId);
  const file = id === undefined ? null : await ctx.db.driveFile.findUnique({ where: { id } });
  if (!file || file.ownerId !== ownerId) throw new DomainError("FILE_NOT_FOUND");
  if (!file.mime.startsWith("image/")) throw new DomainError("UNSUPPORTED_FILE_TYPE");
  return file.id;
}

/** PUT /drive/{id}: the nsfw flag, which every note linked to the file shows. */
export async function updateDriveFile(ctx: Context, fileId: string, nsfw: boolean): Promise<DriveFile> {
  const file = await getDriveFile(ctx, fileId);
  return orGone(ctx.db.driveFile.update({ where: { id: file.id }, data: { nsfw } }), "FILE_NOT_FOUND");
}

/** DELETE /drive/{id}: the row, then its bytes; an avatar or header that was this file is unset. */
export async function deleteDriveFile(ctx: Context, fileId: string): Promise<void> {
  const file = await getDriveFile(ctx, fileId);
  await ctx.db.$transaction(async (tx) => {
    const avatars = await tx.account.updateMany({ where: { avatarFileId: file.id }, data: { avatarFileId: null } });
    const headers = await tx.account.updateMany({ where: { headerFileId: file.id }, data: { headerFileId: null } });
    // The owner's profile lost an image: other servers are told, as for any profile change.
    if (file.ownerId !== null && avatars.count + headers.count > 0) await profileChanged(ctx, tx, file.ownerId);
    // A concurrent deletion of the same file got there first: nothing left to delete.
    const { count } = await tx.driveFile.deleteMany({ where: { id: file.id } });
    if (count === 0) throw new DomainError("FILE_NOT_FOUND");
    // The notes it leaves may no longer have media: PostgreSQL applies has:media, the search
    // index (notes' text only) learns nothing.
  });
  for (const key of [file.id.toString(), thumbnailKey(file.id)]) {
    await ctx.storage.delete(key).catch((err) => ctx.log.warn({ err, key }, "stored file not removed"));
  }
}

export interface FileContent {
  file: DriveFile;
  variant: "file" | "thumbnail";
  mime: string;
  size: number;
  /** The bytes, or a range of them; FILE_NOT_FOUND when the store has lost them. */
  open(range?: ByteRange): Promise<Readable>;
}

/** The bytes behind a file URL (public): the file itself or its thumbnail. */
export async function openFileContent(
  services: Services,
  fileId: string,
  variant: "file" | "thumbnail",
): Promise<FileContent> {
  const id = parseSnowflake(fileId);
  // A deleted account's files are gone at once, before the deletion job removes them.
  const file =
    id === undefined
      ? null
      : await services.db.driveFile.findFirst({
          where: { id, OR: [{ ownerId: null }, { owner: { deletedAt: null } }] },
        });
  if (!file || (variant === "thumbnail" && file.thumbnailSize === null)) throw new DomainError("FILE_NOT_FOUND");
  // Another server's file is not copied here (docs/federation.md): its URL is its origin's.
  if (file.url !== null) throw new DomainError("FILE_NOT_FOUND");
  const key = variant === "file" ? file.id.toString() : thumbnailKey(file.id);
  return {
    file,
    variant,
    mime: variant === "file" ? file.mime : "image/webp",
    size: variant === "file" ? Number(file.size) : (file.thumbnailSize ?? 0),
    open: (range) =>
      services.storage.open(key, range).catch((err) => {
        if (!(err instanceof MissingObject)) throw err;
        services.log.error({ key }, "a file's bytes are missing from storage");
        throw new DomainError("FILE_NOT_FOUND");
      }),
  };
}
