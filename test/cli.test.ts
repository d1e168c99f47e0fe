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
    expect(noAccount.stderr.trim()).toBe('error: no account "nobody"');
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
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe('error: no account "clidoomed"');
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
    expect(again.stderr.trim()).toBe('error: alias "blobcat" is taken');
    const notImage = path.join(server.dataDir, "notes.txt");
    fs.writeFileSync(notImage, "just text");
    const refused = await run("src/cli/main.ts", ["emoji", "add", "notes", notImage], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(`error: ${notImage} is not an image of a known type`);
    const missing = await run("src/cli/main.ts", ["emoji", "add", "nothere", "/nonexistent/x.png"], env);
    expect([missing.code, missing.stderr.trim()]).toEqual([1, "error: no such file: /nonexistent/x.png"]);
    const badAlias = await run("src/cli/main.ts", ["emoji", "add", "a", file], env);
    expect([badAlias.code, badAlias.stderr.trim()]).toEqual([
      1,
      'error: alias "a" must be 2 to 64 letters, digits or _',
    ]);
  });
});

describe("cli search reindex", () => {
  it("says there is nothing to rebuild when search runs on PostgreSQL", async () => {
    const result = await run("src/cli/main.ts", ["search", "reindex"], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/MEILI_URL is not set/);
  });
});

describe("cli seed", () => {
  const seedArgs = ["seed", "--accounts", "3", "--notes", "10"];

  it("refuses a database with accounts it did not make, unless --force", async () => {
    await account(server, "clireal");
    const accounts = await server.services.db.account.count();
    const refused = await run("src/cli/main.ts", seedArgs, env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^error: this database has \d+ accounts? seed did not make .*--force/),
    ]);
    expect(await server.services.db.account.count()).toBe(accounts);
  });

  it("with --force, gives every seeded account a random passphrase printed once", async () => {
    const seeded = await run("src/cli/main.ts", [...seedArgs, "--force"], env);
    expect(seeded.code).toBe(0);
    const lines = seeded.stdout.trim().split("\n");
    const passphrase = /^passphrase of every seeded account: (\S+)$/.exec(lines[0])?.[1];
    expect(passphrase).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(seeded.stdout.split(passphrase as string)).toHaveLength(2); // printed once
    expect(lines[1]).toMatch(/^seeded 3 accounts and 10 notes/);
    const login = (passphrase: string) =>
      server.request("POST", "/login", { body: { name: "viewer", passphrase, captcha_token: "ok" } });
    expect((await login(passphrase as string)).status).toBe(200);
    expect((await login("seed-passphrase")).status).not.toBe(200);
    const again = await run("src/cli/main.ts", [...seedArgs, "--force"], env);
    expect([again.code, again.stderr.trim()]).toEqual([1, "error: this database is seeded already"]);
  });
});
