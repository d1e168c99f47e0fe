// Faults (docs/faults.md#disks): folders that cannot be written. An upload whose scratch folder, or
// whose STORAGE_DIR, refuses it is the server's fault: 503 SERVICE_UNAVAILABLE with Retry-After and
// one error line naming the folder and the error (not 400, not 500, not silence); /readyz writes a
// small file in each folder and names the failing check. Tests run as root, whom no permission
// stops: a folder is made unwritable by putting a regular file where it, or a folder inside it,
// must be.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

interface Line {
  level: number;
  msg: string;
  reqId?: string;
}

const lines: Line[] = [];
const captured = new Writable({
  write(chunk, _encoding, done) {
    for (const text of chunk.toString().split("\n")) if (text) lines.push(JSON.parse(text));
    done();
  },
});

const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-disk-"));
const scratchDir = path.join(storageDir, ".uploads");
let server: TestServer;
let alice: TestAccount;
let png: Buffer;

beforeAll(async () => {
  server = await startTestServer({ STORAGE_DIR: storageDir }, undefined, createLogger("info", captured));
  alice = await account(server, "disk_alice");
  png = await image("png", 32, 32);
});
afterAll(async () => {
  await server.close();
  fs.rmSync(storageDir, { recursive: true, force: true });
});
beforeEach(() => {
  lines.length = 0;
});

async function upload() {
  const form = new FormData();
  form.set("name", "disk.png");
  form.set("file", new Blob([new Uint8Array(png)]), "disk.png");
  const encoded = new Response(form);
  return server.request("POST", "/drive", {
    token: alice.token,
    headers: { "content-type": encoded.headers.get("content-type") ?? "" },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
}

/** The error lines logged about a folder while the request ran. */
const errorLines = () =>
  lines.filter((line) => line.level >= 50 && line.msg.includes("cannot be written")).map((line) => line.msg);

describe("an upload scratch folder that cannot be written", () => {
  it("answers 503 SERVICE_UNAVAILABLE with Retry-After, says so in one line, and /readyz names storage", async () => {
    fs.rmSync(scratchDir, { recursive: true });
    fs.writeFileSync(scratchDir, "not a folder");
    try {
      const answer = await upload();
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 503,
        body: { error: "SERVICE_UNAVAILABLE" },
      });
      expect(answer.headers["retry-after"]).toBe("1");
      expect(errorLines()).toEqual([
        expect.stringMatching(
          new RegExp(`^upload scratch folder ${scratchDir} cannot be written: ENOTDIR: not a directory, open '`),
        ),
      ]);
      const ready = await server.request("GET", "/readyz");
      expect({ status: ready.status, body: ready.body }).toEqual({
        status: 503,
        body: { error: "SERVICE_UNAVAILABLE", checks: { database: "up", storage: "down" } },
      });
      expect(ready.headers["retry-after"]).toBe("1");
    } finally {
      fs.rmSync(scratchDir);
      fs.mkdirSync(scratchDir);
    }
    // Once it can be written again, so are uploads, and the instance is ready.
    expect((await upload()).status).toBe(200);
    expect((await server.request("GET", "/readyz")).status).toBe(200);
  });
});

describe("a STORAGE_DIR that cannot be written", () => {
  it("answers 503 SERVICE_UNAVAILABLE with Retry-After, not 500, and says so in one line", async () => {
    // Every folder a file can go to (by its id's last two digits) is a regular file instead.
    const fanOut = Array.from({ length: 100 }, (_, i) => path.join(storageDir, String(i).padStart(2, "0")));
    for (const folder of fanOut) {
      fs.rmSync(folder, { recursive: true, force: true });
      fs.writeFileSync(folder, "not a folder");
    }
    const files = () => server.services.db.driveFile.count({ where: { ownerId: BigInt(alice.id) } });
    const before = await files();
    try {
      const answer = await upload();
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 503,
        body: { error: "SERVICE_UNAVAILABLE" },
      });
      expect(answer.headers["retry-after"]).toBe("1");
      expect(errorLines()).toEqual([
        expect.stringMatching(new RegExp(`^storage folder ${storageDir} cannot be written: E[A-Z]+: `)),
      ]);
      // Nothing of the refused upload is left: no drive file, no scratch copy.
      expect(await files()).toBe(before);
      expect(fs.readdirSync(scratchDir)).toEqual([]);
    } finally {
      for (const folder of fanOut) fs.rmSync(folder);
    }
    expect((await upload()).status).toBe(200);
  });
});
