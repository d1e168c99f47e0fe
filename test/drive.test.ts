// The drive over REST (docs/drive.md): uploads of real bytes with their type read
// from the bytes, thumbnails and blurhash, every error code, the 100 MiB limit with nothing left
// behind, owner-only metadata at / and /v0, and file serving with Range, ETag and safe headers.
import fs from "node:fs";
import path from "node:path";
import { isBlurhashValid } from "blurhash";
import type { InjectOptions } from "fastify";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { apng, image, ogg, pngBomb, wav, webm } from "./support/media.ts";
import { type Answer, PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";
import { DriveFileShape, expectShape } from "./support/shapes.ts";

const MAX_FILE_SIZE = 104_857_600;

let server: TestServer;
let owner: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  owner = await account(server, "driveowner");
});
afterAll(() => server.close());

type RawAnswer = Answer & { raw: Buffer };

async function call(options: InjectOptions): Promise<RawAnswer> {
  const res = await server.app.inject(options);
  const json = String(res.headers["content-type"] ?? "").includes("application/json") && res.body.length > 0;
  return {
    status: res.statusCode,
    body: json ? JSON.parse(res.body) : res.body,
    headers: res.headers,
    raw: res.rawPayload,
  };
}

function auth(token?: string): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** POSTs a raw multipart (or other) payload. */
function postRaw(payload: Buffer | string, contentType: string, token?: string, url = "/drive"): Promise<RawAnswer> {
  return call({ method: "POST", url, headers: { "content-type": contentType, ...auth(token) }, payload });
}

/** POSTs a FormData as a browser would. */
async function postForm(form: FormData, token?: string, url = "/drive"): Promise<RawAnswer> {
  const r = new Response(form);
  const payload = Buffer.from(await r.arrayBuffer());
  return postRaw(payload, r.headers.get("content-type")!, token, url);
}

interface UploadOptions {
  /** The `name` field; `null` leaves it out. */
  name?: string | null;
  filename?: string;
  type?: string;
  nsfw?: string;
  token?: string;
  url?: string;
}

function blob(data: Buffer | string, type = "application/octet-stream"): Blob {
  return new Blob([typeof data === "string" ? data : new Uint8Array(data)], { type });
}

function upload(data: Buffer | string, options: UploadOptions = {}): Promise<RawAnswer> {
  const form = new FormData();
  const name = options.name === undefined ? "upload.bin" : options.name;
  if (name !== null) form.append("name", name);
  if (options.nsfw !== undefined) form.append("nsfw", options.nsfw);
  form.append("file", blob(data, options.type), options.filename ?? "upload.bin");
  return postForm(form, options.token ?? owner.token, options.url);
}

/** A hand-made multipart body, for the cases a FormData would not send or would copy too often. */
function multipart(
  parts: { name: string; filename?: string; type?: string; data: Buffer | string }[],
  boundary = "murmur-test-boundary-7f3a",
): { payload: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? "" : `; filename="${part.filename}"`}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ""}\r\n`;
    chunks.push(
      Buffer.from(head),
      typeof part.data === "string" ? Buffer.from(part.data) : part.data,
      Buffer.from("\r\n"),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

function storageDir(): string {
  return path.join(server.dataDir, "files");
}

function storedPath(id: string, suffix = ""): string {
  return path.join(storageDir(), id.slice(-2).padStart(2, "0"), `${id}${suffix}`);
}

/** The stored files (the scratch folder apart), relative to the storage folder. */
function storedFiles(): string[] {
  return walk(storageDir()).filter((file) => !file.startsWith(`.uploads${path.sep}`));
}

/** Every file under `dir`, relative to it. */
function walk(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** Deterministic bytes that start with no known file signature. */
function noise(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = 0x2545f491;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  bytes.set([0x7e, 0x13, 0x37, 0x42], 0);
  return bytes;
}

interface ImageMeta {
  format: string;
  width: number;
  height: number;
}

/** The served thumbnail of a file, as sharp reads it. */
async function thumbnailOf(id: string): Promise<{ meta: ImageMeta; answer: RawAnswer }> {
  const answer = await call({ method: "GET", url: `/files/${id}/thumbnail` });
  expect(answer.status).toBe(200);
  const { format, width, height } = await sharp(answer.raw).metadata();
  return { meta: { format, width, height }, answer };
}

describe("upload of each real format", () => {
  const formats: {
    label: string;
    make: () => Promise<Buffer>;
    mime: string;
    file: string;
    size?: [number, number];
  }[] = [
    { label: "PNG", make: () => image("png", 1200, 800), mime: "image/png", file: "a.png", size: [1200, 800] },
    { label: "APNG", make: async () => apng(), mime: "image/apng", file: "a.png", size: [16, 16] },
    { label: "GIF", make: () => image("gif", 300, 200), mime: "image/gif", file: "a.gif", size: [300, 200] },
    { label: "JPEG", make: () => image("jpeg", 800, 1200), mime: "image/jpeg", file: "a.jpg", size: [800, 1200] },
    { label: "WebP", make: () => image("webp", 640, 480), mime: "image/webp", file: "a.webp", size: [640, 480] },
    { label: "AVIF", make: () => image("avif", 100, 50), mime: "image/avif", file: "a.avif", size: [100, 50] },
    { label: "WAV", make: async () => wav(1), mime: "audio/wav", file: "a.wav" },
    { label: "Ogg", make: async () => ogg(), mime: "audio/ogg", file: "a.ogg" },
    { label: "WebM", make: async () => webm(), mime: "video/webm", file: "a.webm" },
  ];

  it.each(formats)("$label -> 200 $mime", async ({ make, mime, file, size }) => {
    const bytes = await make();
    const answer = await upload(bytes, { name: file, filename: file });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const body = answer.body;
    expectShape(DriveFileShape, body, size ? ["thumbnail"] : []);
    expect(body).toMatchObject({ name: file, author_id: owner.id, mime, nsfw: false });
    expect(body.id).toMatch(/^[1-9][0-9]*$/);
    expect(body.url).toBe(`${PUBLIC_URL}/files/${body.id}`);

    const served = await call({ method: "GET", url: `/files/${body.id}` });
    expect(served.status).toBe(200);
    expect(served.headers["content-type"]).toBe(mime);
    expect(served.raw.equals(bytes)).toBe(true);

    if (size) {
      expect(body.hash).not.toBe("");
      expect(isBlurhashValid(body.hash)).toEqual({ result: true });
      expect(body.thumbnail).toBe(`${PUBLIC_URL}/files/${body.id}/thumbnail`);
      const { meta } = await thumbnailOf(body.id);
      expect(meta.format).toBe("webp");
      const longest = Math.max(meta.width, meta.height);
      expect(longest).toBe(Math.min(400, Math.max(...size)));
      // Same orientation as the source.
      expect(meta.width >= meta.height).toBe(size[0] >= size[1]);
    } else {
      expect(body.hash).toBe("");
      expectError(await call({ method: "GET", url: `/files/${body.id}/thumbnail` }), 404, "FILE_NOT_FOUND");
    }
  });

  it("reads the type from the bytes, never from the client's type or extension", async () => {
    const cases: { bytes: Buffer; filename: string; type: string; mime: string }[] = [
      { bytes: await image("png", 60, 40), filename: "photo.jpg", type: "text/plain", mime: "image/png" },
      { bytes: await image("jpeg", 60, 40), filename: "anim.gif", type: "image/gif", mime: "image/jpeg" },
      { bytes: wav(1), filename: "song.png", type: "image/png", mime: "audio/wav" },
      { bytes: webm(), filename: "page.html", type: "text/html", mime: "video/webm" },
    ];
    for (const { bytes, filename, type, mime } of cases) {
      const answer = await upload(bytes, { name: filename, filename, type });
      expect(answer.status, filename).toBe(200);
      expect(answer.body.mime, filename).toBe(mime);
      expect(answer.body.name).toBe(filename);
      const served = await call({ method: "GET", url: `/files/${answer.body.id}` });
      expect(served.headers["content-type"]).toBe(mime);
    }
  });

  it("makes a WebP thumbnail at most 400 px on its long side from a 1200x800 image", async () => {
    const answer = await upload(await image("png", 1200, 800), { name: "big.png" });
    expect(answer.status).toBe(200);
    expect(isBlurhashValid(answer.body.hash).result).toBe(true);
    const { meta, answer: thumb } = await thumbnailOf(answer.body.id);
    expect(thumb.headers["content-type"]).toBe("image/webp");
    expect(meta.format).toBe("webp");
    expect(meta.width).toBe(400);
    expect(Math.abs(meta.height - 267)).toBeLessThanOrEqual(1);
  });

  it("never enlarges a small image: a 100x50 source gives a 100x50 thumbnail", async () => {
    const answer = await upload(await image("png", 100, 50), { name: "small.png" });
    expect(answer.status).toBe(200);
    expect(isBlurhashValid(answer.body.hash).result).toBe(true);
    const { meta } = await thumbnailOf(answer.body.id);
    expect(meta.format).toBe("webp");
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 100, height: 50 });
  });

  it("accepts the upload at /drive/, /v0/drive and /v0/drive/", async () => {
    const bytes = wav(1);
    for (const url of ["/drive/", "/v0/drive", "/v0/drive/"]) {
      const answer = await upload(bytes, { name: "v.wav", url });
      expect(answer.status, url).toBe(200);
      expect(answer.body.mime).toBe("audio/wav");
    }
  });
});

describe("upload errors", () => {
  let png: Buffer;
  beforeAll(async () => {
    png = await image("png", 120, 80);
  });

  it("refuses a text file named x.png with 400 UNSUPPORTED_FILE_TYPE", async () => {
    const answer = await upload("just some words, not a picture\n", {
      name: "x.png",
      filename: "x.png",
      type: "image/png",
    });
    expectError(answer, 400, "UNSUPPORTED_FILE_TYPE");
  });

  it("refuses random bytes with 400 UNSUPPORTED_FILE_TYPE", async () => {
    expectError(await upload(noise(4096), { name: "noise.bin" }), 400, "UNSUPPORTED_FILE_TYPE");
  });

  it("refuses a truncated PNG (first 60 bytes) with 400 UNSUPPORTED_FILE_TYPE, not a 500", async () => {
    const answer = await upload(png.subarray(0, 60), { name: "cut.png", type: "image/png" });
    expectError(answer, 400, "UNSUPPORTED_FILE_TYPE");
  });

  it("refuses a decompression bomb (a valid 144-megapixel PNG in a small file) with UNSUPPORTED_FILE_TYPE", async () => {
    const bomb = pngBomb();
    expect(bomb.length).toBeLessThan(1024 * 1024);
    // Over the 100-megapixel limit, it is refused before decoding; without the limit it decodes.
    expectError(await upload(bomb, { name: "bomb.png", type: "image/png" }), 400, "UNSUPPORTED_FILE_TYPE");
  });

  it("refuses HTML and SVG with script, so nothing executable is ever served", async () => {
    const html = "<html><script>alert(document.cookie)</script></html>";
    for (const [data, name, type] of [
      [html, "page.html", "text/html"],
      [html, "page.png", "image/png"],
      [`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "img.svg", "image/svg+xml"],
    ]) {
      expectError(await upload(data, { name, filename: name, type }), 400, "UNSUPPORTED_FILE_TYPE");
    }
  });

  it("refuses an empty file with 400 INVALID_REQUEST", async () => {
    expectError(await upload(Buffer.alloc(0), { name: "empty.png" }), 400, "INVALID_REQUEST");
  });

  it("takes a name of 256 code points and refuses 257 with FILE_NAME_TOO_LONG", async () => {
    const ok = await upload(png, { name: "🐈".repeat(256) });
    expect(ok.status).toBe(200);
    expect(ok.body.name).toBe("🐈".repeat(256));
    expect([...ok.body.name].length).toBe(256);
    expectError(await upload(png, { name: "🐈".repeat(257) }), 400, "FILE_NAME_TOO_LONG");
  });

  it("refuses an empty name with 400 INVALID_REQUEST", async () => {
    expectError(await upload(png, { name: "" }), 400, "INVALID_REQUEST");
  });

  it("reflects nsfw true and false, and refuses another value with INVALID_REQUEST", async () => {
    const yes = await upload(png, { name: "n1.png", nsfw: "true" });
    expect(yes.status).toBe(200);
    expect(yes.body.nsfw).toBe(true);
    const no = await upload(png, { name: "n2.png", nsfw: "false" });
    expect(no.status).toBe(200);
    expect(no.body.nsfw).toBe(false);
    expectError(await upload(png, { name: "n3.png", nsfw: "yes" }), 400, "INVALID_REQUEST");
  });

  it("refuses a form with no file part with INVALID_REQUEST", async () => {
    const form = new FormData();
    form.append("name", "nothing.png");
    form.append("nsfw", "false");
    expectError(await postForm(form, owner.token), 400, "INVALID_REQUEST");
  });

  it("refuses a form with two file parts with INVALID_REQUEST", async () => {
    const form = new FormData();
    form.append("name", "two.png");
    form.append("file", blob(png, "image/png"), "one.png");
    form.append("file", blob(png, "image/png"), "two.png");
    expectError(await postForm(form, owner.token), 400, "INVALID_REQUEST");
  });

  it("refuses a JSON body instead of multipart with INVALID_REQUEST", async () => {
    const answer = await server.request("POST", "/drive", {
      token: owner.token,
      body: { name: "x.png", file: png.toString("base64"), nsfw: "false" },
    });
    expectError(answer, 400, "INVALID_REQUEST");
  });

  it("refuses a malformed multipart body with INVALID_REQUEST", async () => {
    const answer = await postRaw(
      `--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n${png.toString("latin1")}`,
      "multipart/form-data; boundary=b",
      owner.token,
    );
    expectError(answer, 400, "INVALID_REQUEST");
  });

  it("refuses an upload without credentials with 401 UNAUTHORIZED", async () => {
    const form = new FormData();
    form.append("name", "anon.png");
    form.append("file", blob(png, "image/png"), "anon.png");
    expectUnauthorized(await postForm(form), "UNAUTHORIZED");
  });

  it("falls back to the file part's filename when the name field is missing", async () => {
    const answer = await upload(png, { name: null, filename: "from-part.png" });
    expect(answer.status).toBe(200);
    expect(answer.body.name).toBe("from-part.png");
  });

  it("keeps a non-ASCII filename as sent (UTF-8) when the name field is missing", async () => {
    const answer = await upload(png, { name: null, filename: "café 🐈.png" });
    expect(answer.status).toBe(200);
    expect(answer.body.name).toBe("café 🐈.png");
  });

  it("leaves no row, stored file or scratch file behind for a refused upload, once answered", async () => {
    const before = await server.services.db.driveFile.count();
    const stored = storedFiles();
    const refused: [Buffer, UploadOptions, string][] = [
      [noise(2048), { name: "n.bin" }, "UNSUPPORTED_FILE_TYPE"],
      [png.subarray(0, 60), { name: "cut.png" }, "UNSUPPORTED_FILE_TYPE"],
      [png, { name: "" }, "INVALID_REQUEST"],
      [png, { name: "🐈".repeat(257) }, "FILE_NAME_TOO_LONG"],
      [png, { name: "x.png", nsfw: "yes" }, "INVALID_REQUEST"],
    ];
    for (const [data, options, code] of refused) {
      expectError(await upload(data, options), 400, code);
      expect.soft(walk(path.join(storageDir(), ".uploads")), `scratch files after ${code}`).toEqual([]);
    }
    expect(await server.services.db.driveFile.count()).toBe(before);
    expect(storedFiles()).toEqual(stored);
  });
});

describe("size limit", () => {
  // 101 MB of zeros behind a PNG signature, built once; the 100 MiB + 1 case is a view of it.
  let big: Buffer;
  beforeAll(() => {
    big = Buffer.alloc(101 * 1024 * 1024);
    big.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0);
  });

  async function refusedWithoutLeftovers(data: Buffer): Promise<void> {
    const before = await server.services.db.driveFile.count();
    const stored = storedFiles();
    const { payload, contentType } = multipart([
      { name: "name", data: "huge.png" },
      { name: "nsfw", data: "false" },
      { name: "file", filename: "huge.png", type: "image/png", data },
    ]);
    const answer = await postRaw(payload, contentType, owner.token);
    // Soft, so a wrong code does not hide leftovers (or the other way round).
    expect
      .soft({ status: answer.status, body: answer.body })
      .toEqual({ status: 400, body: { error: "FILE_SIZE_TOO_BIG" } });
    expect.soft(await server.services.db.driveFile.count(), "rows").toBe(before);
    expect.soft(storedFiles(), "stored files").toEqual(stored);
    expect.soft(walk(path.join(storageDir(), ".uploads")), "scratch files").toEqual([]);
  }

  it("refuses a 101 MB upload with 400 FILE_SIZE_TOO_BIG and leaves nothing behind", async () => {
    await refusedWithoutLeftovers(big);
  });

  it("refuses 104,857,601 bytes (100 MiB + 1) with FILE_SIZE_TOO_BIG and leaves nothing behind", async () => {
    await refusedWithoutLeftovers(big.subarray(0, MAX_FILE_SIZE + 1));
  });

  it("accepts exactly 104,857,600 bytes", async () => {
    const header = wav(0).subarray(0, 44);
    const data = Buffer.alloc(MAX_FILE_SIZE);
    header.copy(data, 0);
    data.writeUInt32LE(MAX_FILE_SIZE - 8, 4);
    data.writeUInt32LE(MAX_FILE_SIZE - 44, 40);
    const { payload, contentType } = multipart([
      { name: "name", data: "limit.wav" },
      { name: "file", filename: "limit.wav", type: "audio/wav", data },
    ]);
    const answer = await postRaw(payload, contentType, owner.token);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.mime).toBe("audio/wav");
    expect(fs.statSync(storedPath(answer.body.id)).size).toBe(MAX_FILE_SIZE);
    // Not kept around for the rest of the file.
    expect((await call({ method: "DELETE", url: `/drive/${answer.body.id}`, headers: auth(owner.token) })).status).toBe(
      204,
    );
  });
});

describe.each(["", "/v0"])("drive metadata at '%s'", (prefix) => {
  const tag = prefix ? "v0" : "root";
  let me: TestAccount;
  let other: TestAccount;
  let png: Buffer;

  beforeAll(async () => {
    me = await account(server, `meta${tag}`);
    other = await account(server, `othr${tag}`);
    png = await image("png", 200, 100);
  });

  const get = (url: string, token?: string) => call({ method: "GET", url: prefix + url, headers: auth(token) });
  const put = (url: string, body: unknown, token?: string) =>
    call({
      method: "PUT",
      url: prefix + url,
      headers: { "content-type": "application/json", ...auth(token) },
      payload: JSON.stringify(body),
    });
  const del = (url: string, token?: string) => call({ method: "DELETE", url: prefix + url, headers: auth(token) });
  const add = async (who: TestAccount, name: string, data: Buffer = png) => {
    const answer = await upload(data, { name, token: who.token, url: `${prefix}/drive` });
    expect(answer.status).toBe(200);
    return answer.body;
  };

  it("GET /drive with no files -> 200 []", async () => {
    const answer = await get("/drive", me.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([]);
  });

  it("GET /drive lists only the caller's files, newest first, and pages with before_id", async () => {
    const first = await add(me, "first.png");
    const theirs = await add(other, "theirs.png");
    const second = await add(me, "second.wav", wav(1));
    const third = await add(me, "third.png");

    const list = await get("/drive", me.token);
    expect(list.status).toBe(200);
    expect(list.body.map((f: { id: string }) => f.id)).toEqual([third.id, second.id, first.id]);
    expect(list.body).toEqual([third, second, first]);
    expect(list.body.map((f: { id: string }) => f.id)).not.toContain(theirs.id);

    const page = await get(`/drive?before_id=${second.id}`, me.token);
    expect(page.status).toBe(200);
    expect(page.body).toEqual([first]);

    const theirList = await get("/drive", other.token);
    expect(theirList.body).toEqual([theirs]);
  });

  it("GET /drive with a bad before_id -> 400 INVALID_REQUEST", async () => {
    for (const bad of ["abc", "12x", "-5", "1.5"]) {
      expectError(await get(`/drive?before_id=${bad}`, me.token), 400, "INVALID_REQUEST");
    }
  });

  it("GET /drive/{id}: 200 for the owner, 404 FILE_NOT_FOUND for another account, an unknown or non-numeric id", async () => {
    const file = await add(me, "one.png");
    const answer = await get(`/drive/${file.id}`, me.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(file);
    expectError(await get(`/drive/${file.id}`, other.token), 404, "FILE_NOT_FOUND");
    for (const id of ["123456789012345678", "1", "abc", "99999999999999999999999"]) {
      expectError(await get(`/drive/${id}`, me.token), 404, "FILE_NOT_FOUND");
    }
  });

  it("PUT /drive/{id} sets nsfw, persisted; a bad body is INVALID_REQUEST; another's file FILE_NOT_FOUND", async () => {
    const file = await add(me, "flag.png");
    expect(file.nsfw).toBe(false);
    const answer = await put(`/drive/${file.id}`, { nsfw: true }, me.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ ...file, nsfw: true });
    expect((await get(`/drive/${file.id}`, me.token)).body.nsfw).toBe(true);
    const row = await server.services.db.driveFile.findUnique({ where: { id: BigInt(file.id) } });
    expect(row?.nsfw).toBe(true);

    expectError(await put(`/drive/${file.id}`, { nsfw: "true" }, me.token), 400, "INVALID_REQUEST");
    expectError(await put(`/drive/${file.id}`, {}, me.token), 400, "INVALID_REQUEST");
    expectError(await put(`/drive/${file.id}`, { nsfw: false }, other.token), 404, "FILE_NOT_FOUND");
    expectError(await put("/drive/123456789012345678", { nsfw: false }, me.token), 404, "FILE_NOT_FOUND");
    expect((await get(`/drive/${file.id}`, me.token)).body.nsfw).toBe(true);

    const back = await put(`/drive/${file.id}`, { nsfw: false }, me.token);
    expect(back.status).toBe(200);
    expect(back.body.nsfw).toBe(false);
  });

  it("DELETE /drive/{id} -> 204; the file, its URL, its thumbnail and its bytes on disk are gone", async () => {
    const file = await add(me, "gone.png");
    expect(fs.existsSync(storedPath(file.id))).toBe(true);
    expect(fs.existsSync(storedPath(file.id, ".thumbnail"))).toBe(true);
    expect((await get(`/files/${file.id}`)).status).toBe(200);

    expectError(await del(`/drive/${file.id}`, other.token), 404, "FILE_NOT_FOUND");
    expect((await get(`/drive/${file.id}`, me.token)).status).toBe(200);

    const answer = await del(`/drive/${file.id}`, me.token);
    expect(answer.status).toBe(204);
    expect(answer.raw.length).toBe(0);

    expectError(await get(`/drive/${file.id}`, me.token), 404, "FILE_NOT_FOUND");
    expectError(await get(`/files/${file.id}`), 404, "FILE_NOT_FOUND");
    expectError(await get(`/files/${file.id}/thumbnail`), 404, "FILE_NOT_FOUND");
    expect(fs.existsSync(storedPath(file.id))).toBe(false);
    expect(fs.existsSync(storedPath(file.id, ".thumbnail"))).toBe(false);
    expect((await get("/drive", me.token)).body.map((f: { id: string }) => f.id)).not.toContain(file.id);
    expectError(await del(`/drive/${file.id}`, me.token), 404, "FILE_NOT_FOUND");
    expectError(await del("/drive/abc", me.token), 404, "FILE_NOT_FOUND");
  });

  it("requires credentials: 401 UNAUTHORIZED on every drive metadata route", async () => {
    const file = await add(me, "private.png");
    expectUnauthorized(await get("/drive"), "UNAUTHORIZED");
    expectUnauthorized(await get(`/drive/${file.id}`), "UNAUTHORIZED");
    expectUnauthorized(await put(`/drive/${file.id}`, { nsfw: true }), "UNAUTHORIZED");
    expectUnauthorized(await del(`/drive/${file.id}`), "UNAUTHORIZED");
    expect((await get(`/drive/${file.id}`, me.token)).body.nsfw).toBe(false);
  });
});

describe("file serving", () => {
  let bytes: Buffer;
  let id: string;
  let size: number;

  beforeAll(async () => {
    bytes = await image("png", 300, 200);
    size = bytes.length;
    const answer = await upload(bytes, { name: "served.png", filename: "served.png" });
    expect(answer.status).toBe(200);
    id = answer.body.id;
  });

  const fetchFile = (headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET", url = `/files/${id}`) =>
    call({ method, url, headers });

  it("serves the exact bytes without credentials, with the stored type and safe headers", async () => {
    const answer = await fetchFile();
    expect(answer.status).toBe(200);
    expect(answer.raw.equals(bytes)).toBe(true);
    expect(answer.headers["content-type"]).toBe("image/png");
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    expect(String(answer.headers["content-security-policy"])).toContain("sandbox");
    expect(String(answer.headers["content-disposition"])).toMatch(/^inline/);
    expect(String(answer.headers["content-disposition"])).toContain('filename="served.png"');
    expect(answer.headers["accept-ranges"]).toBe("bytes");
    expect(answer.headers.etag).toMatch(/^(W\/)?".+"$/);
    expect(Number.isNaN(Date.parse(String(answer.headers["last-modified"])))).toBe(false);
    expect(Number(answer.headers["content-length"])).toBe(size);
  });

  it("serves the same at /v0/files/{id}", async () => {
    const answer = await fetchFile({}, "GET", `/v0/files/${id}`);
    expect(answer.status).toBe(200);
    expect(answer.raw.equals(bytes)).toBe(true);
  });

  it("serves the thumbnail as image/webp with nosniff", async () => {
    const answer = await fetchFile({}, "GET", `/files/${id}/thumbnail`);
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("image/webp");
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    expect((await sharp(answer.raw).metadata()).format).toBe("webp");
  });

  it("Range bytes=0-99 -> 206 with the first 100 bytes and Content-Range", async () => {
    const answer = await fetchFile({ range: "bytes=0-99" });
    expect(answer.status).toBe(206);
    expect(answer.raw.length).toBe(100);
    expect(answer.raw.equals(bytes.subarray(0, 100))).toBe(true);
    expect(answer.headers["content-range"]).toBe(`bytes 0-99/${size}`);
    expect(Number(answer.headers["content-length"])).toBe(100);
    expect(answer.headers["content-type"]).toBe("image/png");
  });

  it("Range bytes=-10 -> 206 with the last 10 bytes", async () => {
    const answer = await fetchFile({ range: "bytes=-10" });
    expect(answer.status).toBe(206);
    expect(answer.raw.equals(bytes.subarray(size - 10))).toBe(true);
    expect(answer.headers["content-range"]).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
  });

  it("a suffix Range longer than the file -> 206 with the whole file (RFC 9110)", async () => {
    for (const range of [`bytes=-${size}`, `bytes=-${size + 1}`, "bytes=-999999999"]) {
      const answer = await fetchFile({ range });
      expect(answer.status, range).toBe(206);
      expect(answer.headers["content-range"], range).toBe(`bytes 0-${size - 1}/${size}`);
      expect(answer.raw.equals(bytes), range).toBe(true);
    }
  });

  it("Range past the end -> 416 with Content-Range bytes */size", async () => {
    const answer = await fetchFile({ range: `bytes=${size}-` });
    expect(answer.status).toBe(416);
    expect(answer.headers["content-range"]).toBe(`bytes */${size}`);
  });

  it("a malformed Range gets the whole file with 200", async () => {
    for (const range of ["bytes=abc", "pages=1-2", "bytes"]) {
      const answer = await fetchFile({ range });
      expect(answer.status, range).toBe(200);
      expect(answer.raw.equals(bytes), range).toBe(true);
    }
  });

  it("If-None-Match with the ETag -> 304 with no body", async () => {
    const etag = String((await fetchFile()).headers.etag);
    const answer = await fetchFile({ "if-none-match": etag });
    expect(answer.status).toBe(304);
    expect(answer.raw.length).toBe(0);
    const other = await fetchFile({ "if-none-match": '"something-else"' });
    expect(other.status).toBe(200);
  });

  it("HEAD -> 200 with Content-Length and no body", async () => {
    const answer = await fetchFile({}, "HEAD");
    expect(answer.status).toBe(200);
    expect(Number(answer.headers["content-length"])).toBe(size);
    expect(answer.headers["content-type"]).toBe("image/png");
    expect(answer.raw.length).toBe(0);
  });

  it("an unknown or non-numeric file id -> 404 FILE_NOT_FOUND", async () => {
    for (const url of ["/files/123456789012345678", "/files/abc", "/files/abc/thumbnail"]) {
      expectError(await call({ method: "GET", url }), 404, "FILE_NOT_FOUND");
    }
  });
});
