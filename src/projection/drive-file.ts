// The drive file as every renderer draws it (field.ts), of a drive_files row.
import { Prisma } from "../db/client.ts";
import { fileUrl, fileUrlSql, thumbnailUrl } from "../domain/drive/urls.ts";
import type { DriveFile } from "../generated/prisma/client.ts";
import { column, columnOf, optionalSnowflake, snowflake, stored, timestamp } from "./field.ts";

export const DRIVE_FILE = {
  id: snowflake("id", "id"),
  name: stored<"name", string>("name", "name"),
  ownerId: optionalSnowflake("ownerId", "owner_id"),
  /** Blurhash of the thumbnail; "" for non-images. */
  blurhash: stored<"blurhash", string>("blurhash", "blurhash"),
  /** The blurhash of an image; null for other files. */
  blur: column(
    (f: Pick<DriveFile, "blurhash">) => f.blurhash || null,
    (t) => Prisma.sql`NULLIF(${columnOf(t, "blurhash")}, '')`,
  ),
  mime: stored<"mime", string>("mime", "mime"),
  size: column(
    (f: Pick<DriveFile, "size">) => Number(f.size),
    (t) => columnOf(t, "size"),
  ),
  nsfw: stored<"nsfw", boolean>("nsfw", "nsfw"),
  /** Where it is served: here, or a remote file's origin (not copied, docs/federation.md). */
  url: column(
    (f: Pick<DriveFile, "id" | "url">, v) => f.url ?? fileUrl(v, f.id),
    (t, v) => Prisma.sql`COALESCE(${columnOf(t, "url")}, ${fileUrlSql(v, columnOf(t, "id"))})`,
  ),
  /** The thumbnail's URL; null for a file without one. */
  thumbnail: column(
    (f: Pick<DriveFile, "id" | "thumbnailSize">, v) => (f.thumbnailSize === null ? null : thumbnailUrl(v, f.id)),
    (t, v) =>
      Prisma.sql`CASE WHEN ${columnOf(t, "thumbnail_size")} IS NULL THEN NULL ELSE ${fileUrlSql(v, columnOf(t, "id"), "/thumbnail")} END`,
  ),
  createdAt: timestamp("createdAt", "created_at"),
};
