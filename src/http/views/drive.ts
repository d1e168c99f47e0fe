// The documented drive file (docs/drive.md#shape) and its view.
import { z } from "zod";
import type { Context } from "../../domain/context.ts";

import type { DriveFile } from "../../generated/prisma/client.ts";
import { DRIVE_FILE } from "../../projection/drive-file.ts";
import { viewerOf } from "../../projection/field.ts";
import { named, Snowflake, Url, wireObject } from "./wire.ts";

export const DriveFileShape = named(
  "DriveFile",
  "An uploaded file (see docs/drive.md#shape); `hash` is empty and `thumbnail` absent for non-images.",
  z.strictObject({
    id: Snowflake,
    name: z.string(),
    author_id: z.union([Snowflake, z.literal("")]),
    hash: z.string(),
    mime: z.string(),
    nsfw: z.boolean(),
    url: Url,
    thumbnail: Url.optional(),
  }),
);

export const DRIVE_FILE_WIRE = wireObject<DriveFile, typeof DriveFileShape>(DriveFileShape, {
  id: DRIVE_FILE.id,
  name: DRIVE_FILE.name,
  author_id: { field: DRIVE_FILE.ownerId, ifNull: "" },
  hash: DRIVE_FILE.blurhash,
  mime: DRIVE_FILE.mime,
  nsfw: DRIVE_FILE.nsfw,
  url: DRIVE_FILE.url,
  thumbnail: DRIVE_FILE.thumbnail,
});

export function driveFileView(ctx: Context, f: DriveFile): z.infer<typeof DriveFileShape> {
  return DRIVE_FILE_WIRE.view(f, viewerOf(ctx));
}
