// File storage (docs/drive.md#file-urls, docs/fleet.md#object-storage), the same tests against the
// local folder and an S3 bucket (a real S3 server, s3rver, on a free port): put, whole and ranged
// reads, a missing key, delete, 100 MB through, and over HTTP: downloads with Range and thumbnails
// from the bucket, bytes gone from the store answering 404 FILE_NOT_FOUND (never 500), deletion
// removing every object, and an upload cut off midway leaving none; and `storage migrate` copying a
// local store into a bucket.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateStorage } from "../src/cli/storage-migrate.ts";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { closeServices, createServices } from "../src/services.ts";
import { createLocalStorage } from "../src/storage/local.ts";
import { createS3Storage } from "../src/storage/s3.ts";
import { MissingObject, type Storage } from "../src/storage/storage.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestS3, TEST_BUCKET, type TestS3 } from "./support/s3.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), "murmur-store-"));

function localFile(dir: string, bytes: Buffer): string {
  const file = path.join(dir, `in-${randomBytes(6).toString("hex")}`);
  fs.writeFileSync(file, bytes);
  return file;
}

describe.each(["local", "s3"] as const)("the %s store", (kind) => {
  let storage: Storage;
  let s3: TestS3 | undefined;

  beforeAll(async () => {
    if (kind === "s3") {
      s3 = await startTestS3();
      storage = await createS3Storage({
        bucket: TEST_BUCKET,
        endpoint: s3.env.S3_ENDPOINT,
        region: "us-east-1",
        accessKeyId: "S3RVER",
        secretAccessKey: "S3RVER",
        forcePathStyle: true,
        scratchDir: scratch(),
      });
    } else {
      storage = await createLocalStorage(scratch());
    }
  });
  afterAll(() => s3?.close());

  it("puts a file, moving it out of the scratch folder, and reads it whole and by range", async () => {
    const bytes = Buffer.from("0123456789");
    const file = localFile(storage.scratchDir, bytes);
    await storage.putFile("1001", file);
    expect(fs.existsSync(file)).toBe(false);
    expect((await buffer(await storage.open("1001"))).toString()).toBe("0123456789");
    expect((await buffer(await storage.open("1001", { start: 2, end: 4 }))).toString()).toBe("234");
    expect((await buffer(await storage.open("1001", { start: 9, end: 9 }))).toString()).toBe("9");
  });

  it("a missing key is MissingObject; deleting removes, and deleting a missing key is no error", async () => {
    await expect(storage.open("4040")).rejects.toBeInstanceOf(MissingObject);
    await storage.putFile("1002", localFile(storage.scratchDir, Buffer.from("x")));
    await storage.delete("1002");
    await expect(storage.open("1002")).rejects.toBeInstanceOf(MissingObject);
    await storage.delete("1002");
  });

  it("takes 100 MB in and gives it back byte for byte", async () => {
    const dir = storage.scratchDir;
    const file = path.join(dir, "big");
    const hash = createHash("sha256");
    const out = fs.openSync(file, "w");
    for (let i = 0; i < 100; i++) {
      const chunk = randomBytes(1024 * 1024);
      hash.update(chunk);
      fs.writeSync(out, chunk);
    }
    fs.closeSync(out);
    const expected = hash.digest("hex");
    await storage.putFile("1003", file);
    const back = createHash("sha256");
    let size = 0;
    for await (const chunk of await storage.open("1003")) {
      back.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    expect(size).toBe(100 * 1024 * 1024);
    expect(back.digest("hex")).toBe(expected);
    await storage.delete("1003");
  }, 120_000);
});

describe("files over HTTP from an S3 bucket", () => {
  let s3: TestS3;
  let server: TestServer;
  let alice: TestAccount;

  beforeAll(async () => {
    s3 = await startTestS3();
    server = await startTestServer(s3.env);
    alice = await account(server, "alice");
  });
  afterAll(async () => {
    await server?.close();
    await s3?.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    server.app.inject({ method: "GET", url: new URL(url).pathname, headers });

  it("stores the file and its thumbnail in the bucket and serves them whole and by range", async () => {
    const png = await image("png", 64, 48);
    const file = await uploadFile(server, alice, png, "pic.png");
    expect(await s3.keys()).toEqual(expect.arrayContaining([file.id, `${file.id}.thumbnail`]));
    const whole = await get(file.url);
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(png)).toBe(true);
    const part = await get(file.url, { range: "bytes=0-9" });
    expect(part.statusCode).toBe(206);
    expect(part.headers["content-range"]).toBe(`bytes 0-9/${png.length}`);
    expect(part.rawPayload.equals(png.subarray(0, 10))).toBe(true);
    const thumbnail = await get(file.thumbnail ?? "");
    expect(thumbnail.statusCode).toBe(200);
    expect(thumbnail.headers["content-type"]).toBe("image/webp");
  });

  it("deleting the file removes both objects", async () => {
    const file = await uploadFile(server, alice, await image("png", 32, 32), "gone.png");
    const answer = await server.request("DELETE", `/drive/${file.id}`, { token: alice.token });
    expect(answer.status).toBe(204);
    expect((await s3.keys()).filter((k) => k.startsWith(file.id))).toEqual([]);
    const gone = await get(file.url);
    expect({ status: gone.statusCode, body: gone.json() }).toEqual({ status: 404, body: { error: "FILE_NOT_FOUND" } });
  });

  it("bytes gone from the bucket answer 404 FILE_NOT_FOUND, never 500", async () => {
    const file = await uploadFile(server, alice, await image("png", 32, 32), "lost.png");
    await server.services.storage.delete(file.id);
    await server.services.storage.delete(`${file.id}.thumbnail`);
    for (const [url, headers] of [
      [file.url, {}],
      [file.url, { range: "bytes=0-3" }],
      [file.thumbnail ?? "", {}],
    ] as const) {
      const answer = await get(url, headers);
      expect({ status: answer.statusCode, body: answer.json() }).toEqual({
        status: 404,
        body: { error: "FILE_NOT_FOUND" },
      });
    }
  });

  it("/readyz says the bucket answers, and is 503 once it does not", async () => {
    const ready = await server.request("GET", "/readyz");
    expect(ready.body).toEqual({ status: "ready", checks: { database: "up", storage: "up" } });
    const down = await startTestServer({ ...s3.env, S3_ENDPOINT: "http://127.0.0.1:9" });
    try {
      expect((await down.request("GET", "/readyz")).status).toBe(503);
    } finally {
      await down.close();
    }
  });

  it("an upload cut off midway leaves no object and no file", async () => {
    const before = await s3.keys();
    const boundary = "cutcutcut";
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`),
      randomBytes(200_000),
    ]);
    const answer = await server.app.inject({
      method: "POST",
      url: "/drive",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, authorization: `Bearer ${alice.token}` },
      payload: body,
    });
    expect(answer.statusCode).toBe(400);
    expect(await s3.keys()).toEqual(before);
    expect(await server.services.db.driveFile.count({ where: { name: "cut.bin" } })).toBe(0);
  });
});

describe("files over HTTP from the local folder", () => {
  let server: TestServer;
  let alice: TestAccount;
  beforeAll(async () => {
    server = await startTestServer();
    alice = await account(server, "alice");
  });
  afterAll(() => server?.close());

  it("bytes gone from the folder answer 404 FILE_NOT_FOUND, never 500", async () => {
    const file = await uploadFile(server, alice, await image("png", 32, 32), "lost.png");
    await server.services.storage.delete(file.id);
    const answer = await server.app.inject({ method: "GET", url: new URL(file.url).pathname });
    expect({ status: answer.statusCode, body: answer.json() }).toEqual({
      status: 404,
      body: { error: "FILE_NOT_FOUND" },
    });
  });
});

describe("storage migrate", () => {
  it("copies every file and thumbnail of the local folder into the bucket, and a second run copies nothing", async () => {
    const s3 = await startTestS3();
    const server = await startTestServer();
    try {
      const alice = await account(server, "alice");
      const second = await image("png", 20, 20);
      const files = [
        await uploadFile(server, alice, await image("png", 40, 30), "a.png"),
        await uploadFile(server, alice, second, "b.png"),
      ];
      // The same database and folder, now with the bucket configured: what an operator runs.
      const config = loadConfig({
        DATA_DIR: server.dataDir,
        STORAGE_DIR: server.services.config.storageDir,
        WORKER_ID: "2",
        LOG_LEVEL: "silent",
        ...s3.env,
      });
      const services = await createServices(config, server.databaseUrl, createLogger("silent"));
      try {
        const first = await migrateStorage(services, false);
        expect(first).toEqual({ copied: 4, skipped: 0, missing: [] });
        expect(await s3.keys()).toEqual(files.flatMap((f) => [f.id, `${f.id}.thumbnail`]).sort());
        const back = await buffer(await services.storage.open(files[1].id));
        expect(back.equals(second)).toBe(true);
        // Local files stay; a second run (say, after one cut short) finds everything there.
        expect(await server.services.storage.exists(files[1].id)).toBe(true);
        expect(await migrateStorage(services, false)).toEqual({ copied: 0, skipped: 4, missing: [] });
      } finally {
        await closeServices(services);
      }
    } finally {
      await server.close();
      await s3.close();
    }
  });
});
