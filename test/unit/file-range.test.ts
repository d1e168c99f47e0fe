// How Range headers are answered for a file's bytes (RFC 9110 14), on a 10-byte file: a suffix
// longer than the file is the whole file (206, bytes 0-9/10), not unsatisfiable.
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import type { FileContent } from "../../src/domain/drive/service.ts";
import { fileReply } from "../../src/rest/files.ts";

const BYTES = Buffer.from("0123456789");

const content: FileContent = {
  file: {
    id: 1n,
    ownerId: 2n,
    name: "ten.txt",
    mime: "text/plain",
    size: BigInt(BYTES.length),
    nsfw: false,
    blurhash: "",
    thumbnailSize: null,
    url: null,
    createdAt: new Date("2026-01-02T03:04:05.678Z"),
  },
  variant: "file",
  mime: "text/plain",
  size: BYTES.length,
  open: async (range) => Readable.from([range ? BYTES.subarray(range.start, range.end + 1) : BYTES]),
};

async function answer(range: string) {
  const reply = await fileReply(content, { range });
  const body = reply.body instanceof Readable ? (await buffer(reply.body)).toString() : reply.body;
  return { status: reply.status, contentRange: reply.headers?.["content-range"], body };
}

describe("Range on a 10-byte file", () => {
  it.each([
    ["bytes=-999999", 206, "bytes 0-9/10", "0123456789"],
    ["bytes=-11", 206, "bytes 0-9/10", "0123456789"],
    ["bytes=-10", 206, "bytes 0-9/10", "0123456789"],
    ["bytes=-3", 206, "bytes 7-9/10", "789"],
    ["bytes=2-4", 206, "bytes 2-4/10", "234"],
    ["bytes=5-999", 206, "bytes 5-9/10", "56789"],
    ["bytes=0-1,-999", 206, "bytes 0-9/10", "0123456789"],
  ])("%s -> %i %s", async (range, status, contentRange, body) => {
    expect(await answer(range)).toEqual({ status, contentRange, body });
  });

  it.each(["bytes=10-", "bytes=-0", "bytes=20-30"])("%s is unsatisfiable: 416, bytes */10", async (range) => {
    expect(await answer(range)).toEqual({
      status: 416,
      contentRange: "bytes */10",
      body: { error: "INVALID_REQUEST" },
    });
  });
});
