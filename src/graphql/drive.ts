// The DriveFile type, the drive queries and mutations, and uploads (the Upload scalar of
// graphql-upload-minimal, streamed like REST uploads).
import { GraphQLUpload } from "graphql-upload-minimal";
import * as drive from "../domain/drive/service.ts";
import { DomainError } from "../domain/errors.ts";
import { DRIVE_FILE } from "../projection/drive-file.ts";
import { builder, done, limited } from "./builder.ts";
import { AFTER_DESCRIPTION, connectionType, firstDescription, page, pageComplexity } from "./connection.ts";
import { projected } from "./projected.ts";

const Upload = builder.addScalarType("Upload", GraphQLUpload, {});

export const DriveFileRef = builder.prismaObject("DriveFile", {
  description: "An uploaded file; its type is read from its bytes.",
  fields: (t) => ({
    id: t.id(projected(DRIVE_FILE.id)),
    name: t.string(projected(DRIVE_FILE.name)),
    authorId: t.id({ nullable: true, ...projected(DRIVE_FILE.ownerId) }),
    hash: t.string({
      description: "Blurhash of the thumbnail; empty for non-images.",
      ...projected(DRIVE_FILE.blurhash),
    }),
    mime: t.string(projected(DRIVE_FILE.mime)),
    size: t.int(projected(DRIVE_FILE.size)),
    nsfw: t.boolean(projected(DRIVE_FILE.nsfw)),
    url: t.string(projected(DRIVE_FILE.url)),
    thumbnail: t.string({ nullable: true, ...projected(DRIVE_FILE.thumbnail) }),
  }),
});

const DriveFileConnection = connectionType(
  "DriveFile",
  DriveFileRef,
  "A page of the caller's files, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

builder.queryFields((t) => ({
  driveFiles: t.field({
    type: DriveFileConnection,
    errors: { directResult: true },
    complexity: pageComplexity(drive.DRIVE_PAGE),
    description: "The caller's files, newest first.",
    args: {
      first: t.arg.int({ description: firstDescription(drive.DRIVE_PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) =>
      page(args, drive.DRIVE_PAGE, (after, limit) => drive.listDriveFiles(ctx, after, limit)),
  }),
  driveFile: t.field({
    type: DriveFileRef,
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => drive.getDriveFile(ctx, args.id.toString()),
  }),
}));

builder.mutationFields((t) => ({
  uploadFile: t.field({
    type: DriveFileRef,
    errors: {},
    description: "Upload a file (GraphQL multipart request). `name` defaults to the file's own name.",
    args: {
      file: t.arg({ type: Upload, required: true }),
      name: t.arg.string(),
      nsfw: t.arg.boolean(),
    },
    resolve: limited("upload", async (_root, args, ctx) => {
      // An upload that never came (missing, or its body cut short: multipart-parts.ts) is the client's.
      const file = await Promise.resolve(args.file).catch(() => {
        throw new DomainError("INVALID_REQUEST");
      });
      return drive.uploadDriveFileFromStream(ctx, {
        name: args.name ?? file.filename,
        nsfw: args.nsfw ?? undefined,
        open: () => file.createReadStream(),
      });
    }),
  }),
  updateFile: t.field({
    type: DriveFileRef,
    errors: {},
    args: { id: t.arg.id({ required: true }), nsfw: t.arg.boolean({ required: true }) },
    resolve: (_root, args, ctx) => drive.updateDriveFile(ctx, args.id.toString(), args.nsfw),
  }),
  deleteFile: t.boolean({
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(drive.deleteDriveFile(ctx, args.id.toString())),
  }),
}));
