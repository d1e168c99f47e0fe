// How file bytes are answered over HTTP (docs/drive.md#file-urls): the stored type, Range
// (206/416), ETag/Last-Modified with 304, and headers that keep an upload from ever running as a
// page.
import contentDisposition from "content-disposition";
import parseRange from "range-parser";
import type { FileContent } from "../domain/drive/service.ts";
import type { RestReply } from "./route.ts";

export async function fileReply(content: FileContent, request: Record<string, string | undefined>): Promise<RestReply> {
  const { file, size } = content;
  const etag = `"${file.id}${content.variant === "thumbnail" ? "-thumbnail" : ""}"`;
  const headers: Record<string, string> = {
    "content-type": content.mime,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "content-disposition": contentDisposition(content.variant === "thumbnail" ? `${file.name}.webp` : file.name, {
      type: "inline",
    }),
    "accept-ranges": "bytes",
    etag,
    "last-modified": file.createdAt.toUTCString(),
    // A file's bytes never change under its id.
    "cache-control": "public, max-age=86400",
  };
  const ifNoneMatch = request["if-none-match"];
  if (ifNoneMatch?.split(",").some((tag) => [etag, "*"].includes(tag.trim().replace(/^W\//, "")))) {
    return { status: 304, headers };
  }
  const rangeHeader = request.range;
  const ifRange = request["if-range"];
  if (rangeHeader && (ifRange === undefined || ifRange === etag)) {
    const ranges = parseRange(size, wholeSuffixes(rangeHeader, size), { combine: true });
    if (ranges === -1) {
      return {
        status: 416,
        headers: { ...headers, "content-type": "application/json; charset=utf-8", "content-range": `bytes */${size}` },
        body: { error: "INVALID_REQUEST" },
      };
    }
    // One range is served as asked; a malformed header or several ranges get the whole file.
    if (ranges !== -2 && ranges.type === "bytes" && ranges.length === 1) {
      const [{ start, end }] = ranges;
      return {
        status: 206,
        headers: {
          ...headers,
          "content-range": `bytes ${start}-${end}/${size}`,
          "content-length": String(end - start + 1),
        },
        body: await content.open({ start, end }),
      };
    }
  }
  return { status: 200, headers: { ...headers, "content-length": String(size) }, body: await content.open() };
}

/**
 * A suffix range longer than the file (`bytes=-999` of 10 bytes) means the whole file (RFC 9110
 * 14.1.2), which range-parser would call unsatisfiable: such a range is read as `0-`.
 */
function wholeSuffixes(header: string, size: number): string {
  return header.replace(/(=|,)\s*-0*([1-9][0-9]*)\s*(?=,|$)/g, (match, lead: string, length: string) =>
    Number(length) >= size ? `${lead}0-` : match,
  );
}
