// The documented drive file (docs/drive.md#shape) and its view.
import { z } from "zod";
import type { Context } from "../../domain/context.ts";
import { fileUrl, thumbnailUrl } from "../../domain/drive/urls.ts";
import type { DriveFile } from "../../generated/prisma/client.ts";
import { named, Snowflake, Url } from "./wire.ts";

export const DriveFileShape = named(
  "DriveFile",
  "An uploaded file (spec 2.8); `hash` is empty and `thumbnail` absent for non-images.",
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

export function driveFileView(ctx: Context, f: DriveFile): z.infer<typeof DriveFileShape> {
  return {
    id: f.id.toString(),
    name: f.name,
    author_id: f.ownerId?.toString() ?? "",
    hash: f.blurhash,
    mime: f.mime,
    nsfw: f.nsfw,
    url: fileUrl(ctx.config, f.id),
    ...(f.thumbnailSize === null ? {} : { thumbnail: thumbnailUrl(ctx.config, f.id) }),
  };
}
