// The operator CLI (CONTRACT 1): role and announce, against a test database.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account } from "./support/fixtures.ts";
import { ROOT, run } from "./support/process.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let env: Record<string, string>;
beforeAll(async () => {
  server = await startTestServer();
  env = { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, PUBLIC_URL: "http://murmur.test" };
});
afterAll(() => server.close());

describe("cli", () => {
  it("--version prints the installed version, from any folder, without a database", async () => {
    const { version } = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    const result = await run("src/cli/main.ts", ["--version"], { DATABASE_URL: "postgres://nowhere.invalid/x" });
    expect([result.code, result.stdout, result.stderr]).toEqual([0, `${version}\n`, ""]);
    const bin = spawnSync(process.execPath, [path.join(ROOT, "bin/murmur.js"), "--version"], {
      cwd: os.tmpdir(),
      encoding: "utf8",
    });
    expect([bin.status, bin.stdout]).toEqual([0, `${version}\n`]);
  });

  it("role makes an account a moderator, who may then freeze others", async () => {
    const mod = await account(server, "climod");
    await account(server, "clitarget");
    const denied = await server.request("PUT", "/accounts/clitarget/freeze", { token: mod.token, body: {} });
    expect(denied.status).toBe(403);

    const result = await run("src/cli/main.ts", ["role", "@climod@murmur.test", "moderator"], env);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("climod is now moderator");
    const frozen = await server.request("PUT", "/accounts/clitarget/freeze", { token: mod.token, body: {} });
    expect(frozen.status).toBe(204);
  });

  it("role refuses an unknown role or account", async () => {
    const badRole = await run("src/cli/main.ts", ["role", "climod", "king"], env);
    expect(badRole.code).not.toBe(0);
    expect(badRole.stderr).toMatch(/normal, moderator, admin/);
    const noAccount = await run("src/cli/main.ts", ["role", "nobody", "admin"], env);
    expect(noAccount.code).toBe(1);
    expect(noAccount.stderr.trim()).toBe("error: ACCOUNT_NOT_FOUND");
  });

  it("announce publishes an announcement and prints its id", async () => {
    const result = await run(
      "src/cli/main.ts",
      ["announce", "--type", "warn", "--title", "Maintenance", "--description", "Down at noon"],
      env,
    );
    expect(result.code).toBe(0);
    const id = result.stdout.trim();
    expect(id).toMatch(/^[0-9]+$/);
    const stored = await server.services.db.announcement.findUnique({ where: { id: BigInt(id) } });
    expect(stored).toMatchObject({ type: "warn", title: "Maintenance", description: "Down at noon" });
  });

  it("has --help for every command", async () => {
    for (const args of [
      ["--help"],
      ["role", "--help"],
      ["announce", "--help"],
      ["emoji", "add", "--help"],
      ["backup", "--help"],
      ["restore", "--help"],
    ]) {
      const result = await run("src/cli/main.ts", args, env);
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stdout).toMatch(/Usage: murmur/);
    }
  });
});

describe("cli account", () => {
  it("list prints name, id, role, created and notes; delete removes an account for good, its name reserved", async () => {
    const doomed = await account(server, "clidoomed");
    await server.request("POST", "/notes", { token: doomed.token, body: { content: "bye" } });
    const listed = await run("src/cli/main.ts", ["account", "list", "--limit", "10000"], env);
    expect(listed.code).toBe(0);
    const line = listed.stdout.split("\n").find((l) => l.startsWith("clidoomed\t"));
    expect(line?.split("\t")).toEqual(["clidoomed", doomed.id, "normal", expect.stringMatching(/^\d{4}-/), "1"]);

    const deleted = await run("src/cli/main.ts", ["account", "delete", "clidoomed"], env);
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);
    expect((await server.request("GET", "/accounts/clidoomed")).status).toBe(404);
    expect(await server.services.db.note.count({ where: { authorId: BigInt(doomed.id) } })).toBe(0);
    expect(await server.services.db.accountDeletion.count()).toBe(0);
    const after = await run("src/cli/main.ts", ["account", "list", "--limit", "10000"], env);
    expect(after.stdout).not.toContain("clidoomed");
    const again = await run("src/cli/main.ts", ["account", "delete", "clidoomed"], env);
    expect(again.stderr.trim()).toBe("error: ACCOUNT_NOT_FOUND");
    const tooMany = await run("src/cli/main.ts", ["account", "list", "--limit", "10001"], env);
    expect(tooMany.code).not.toBe(0);
  });
});

describe("cli emoji", () => {
  it("emoji add stores the image as an instance file and prints the emoji id", async () => {
    const { image } = await import("./support/media.ts");
    const fs = await import("node:fs");
    const path = await import("node:path");
    const file = path.join(server.dataDir, "blobcat.png");
    fs.writeFileSync(file, await image("png", 64, 64));
    const result = await run("src/cli/main.ts", ["emoji", "add", "blobcat", file], env);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const id = BigInt(result.stdout.trim());
    const emoji = await server.services.db.customEmoji.findUnique({ where: { id }, include: { file: true } });
    expect(emoji).toMatchObject({ alias: "blobcat", file: { ownerId: null, mime: "image/png" } });
    const served = await server.request("GET", `/files/${emoji?.fileId}`);
    expect(served.status).toBe(200);
    expect(served.headers["content-type"]).toBe("image/png");

    const again = await run("src/cli/main.ts", ["emoji", "add", "blobcat", file], env);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe("error: INVALID_REQUEST");
    const notImage = path.join(server.dataDir, "notes.txt");
    fs.writeFileSync(notImage, "just text");
    const refused = await run("src/cli/main.ts", ["emoji", "add", "notes", notImage], env);
    expect(refused.stderr.trim()).toBe("error: UNSUPPORTED_FILE_TYPE");
  });
});

describe("cli search reindex", () => {
  it("says there is nothing to rebuild when search runs on PostgreSQL", async () => {
    const result = await run("src/cli/main.ts", ["search", "reindex"], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/MEILI_URL is not set/);
  });
});
