// Routes of the drive (docs/drive.md#uploads) and of the file URLs it hands out
// (docs/drive.md#file-urls).
import { z } from "zod";
import * as drive from "../../domain/drive/service.ts";
import { DriveFileShape, driveFileView } from "../../http/views/drive.ts";
import * as field from "../fields.ts";
import { fileReply } from "../files.ts";
import { querySnowflake } from "../query.ts";
import { type MultipartBody, type ResponseHeader, route } from "../route.ts";
import { errorShape } from "../views/error.ts";

const fileParams = z.object({ file_id: field.id("the drive file") });

const header = (name: string, description: string): ResponseHeader => ({ name, required: true, description });
const FILE_HEADERS = [
  header("ETag", "the file's strong validator"),
  header("Last-Modified", "when it was uploaded"),
  header("Accept-Ranges", "`bytes`"),
  header("X-Content-Type-Options", "`nosniff`"),
];

function contentRoute(variant: "file" | "thumbnail") {
  return route({
    method: "GET",
    path: variant === "file" ? "/files/:file_id" : "/files/:file_id/thumbnail",
    operationId: variant === "file" ? "downloadFile" : "downloadThumbnail",
    summary:
      variant === "file" ? "A file's bytes, with its stored type and Range support" : "An image's WebP thumbnail",
    tag: "drive",
    auth: "none",
    // File bytes are not limited: a page of images would use up an anonymous quota.
    rateLimit: "none",
    params: fileParams,
    headers: ["Range", "If-None-Match", "If-Range"],
    success: { status: 200, description: "the bytes, of their stored type", bytes: true, headers: FILE_HEADERS },
    also: [
      {
        status: 206,
        description: "the one range asked for",
        bytes: true,
        headers: [...FILE_HEADERS, header("Content-Range", "`bytes <first>-<last>/<size>`")],
      },
      { status: 304, description: "unchanged since the ETag given in If-None-Match", headers: FILE_HEADERS },
      {
        status: 416,
        description: "INVALID_REQUEST: the range starts past the end",
        schema: errorShape(["INVALID_REQUEST"]),
        headers: [...FILE_HEADERS, header("Content-Range", "`bytes */<size>`")],
      },
    ],
    errors: ["FILE_NOT_FOUND"],
    // The stream is opened here, before anything is answered: missing bytes are FILE_NOT_FOUND.
    run: async (ctx, { params, headers }) =>
      fileReply(await drive.openFileContent(ctx, params.file_id, variant), headers),
    reply: (answer) => answer,
  });
}

export const driveRoutes = [
  route({
    method: "POST",
    path: "/drive",
    operationId: "uploadDriveFile",
    summary: "Upload a file (multipart: name, file, nsfw); its type is read from its bytes",
    tag: "drive",
    auth: "required",
    rateLimit: "upload",
    multipart: true,
    body: z.object({
      name: field.fileName.optional(),
      file: z.string().meta({ format: "binary", description: "the content, 1 byte to 100 MB" }),
      nsfw: z.enum(["true", "false"]).optional().describe("flag the file as not safe for work (default false)"),
    }),
    success: { status: 200, description: "the drive file", schema: DriveFileShape },
    errors: ["FILE_SIZE_TOO_BIG", "FILE_NAME_TOO_LONG", "UNSUPPORTED_FILE_TYPE"],
    run: (ctx, { body }) => {
      const { fields, upload, filename } = body as unknown as MultipartBody;
      return drive.uploadDriveFile(ctx, { name: fields.name ?? filename, nsfw: fields.nsfw, upload });
    },
    reply: (file, ctx) => ({ status: 200, body: driveFileView(ctx, file) }),
  }),
  route({
    method: "GET",
    path: "/drive",
    operationId: "getDriveFiles",
    summary: "The caller's files, newest first (100 a page; before_id pages further)",
    tag: "drive",
    auth: "required",
    query: z.object({ before_id: querySnowflake.optional() }),
    success: { status: 200, description: "the files", schema: z.array(DriveFileShape) },
    errors: [],
    run: (ctx, { query }) => drive.listDriveFiles(ctx, query.before_id),
    reply: (files, ctx) => ({ status: 200, body: files.map((f) => driveFileView(ctx, f)) }),
  }),
  route({
    method: "GET",
    path: "/drive/:file_id",
    operationId: "getDriveFile",
    summary: "One of the caller's files",
    tag: "drive",
    auth: "required",
    params: fileParams,
    success: { status: 200, description: "the drive file", schema: DriveFileShape },
    errors: ["FILE_NOT_FOUND"],
    run: (ctx, { params }) => drive.getDriveFile(ctx, params.file_id),
    reply: (file, ctx) => ({ status: 200, body: driveFileView(ctx, file) }),
  }),
  route({
    method: "PUT",
    path: "/drive/:file_id",
    operationId: "updateDriveFile",
    summary: "Set the nsfw flag; every note linked to the file shows it",
    tag: "drive",
    auth: "required",
    params: fileParams,
    body: z.object({ nsfw: z.boolean().describe("not safe for work: every note linked to the file shows it") }),
    success: { status: 200, description: "the drive file", schema: DriveFileShape },
    errors: ["FILE_NOT_FOUND"],
    run: (ctx, { params, body }) => drive.updateDriveFile(ctx, params.file_id, body.nsfw),
    reply: (file, ctx) => ({ status: 200, body: driveFileView(ctx, file) }),
  }),
  route({
    method: "DELETE",
    path: "/drive/:file_id",
    operationId: "deleteDriveFile",
    summary: "Delete a file; it leaves every note linked to it and its URL answers 404",
    tag: "drive",
    auth: "required",
    params: fileParams,
    body: z.unknown(),
    success: { status: 204, description: "deleted" },
    errors: ["FILE_NOT_FOUND"],
    run: (ctx, { params }) => drive.deleteDriveFile(ctx, params.file_id),
    reply: () => ({ status: 204 }),
  }),
  contentRoute("file"),
  contentRoute("thumbnail"),
];
