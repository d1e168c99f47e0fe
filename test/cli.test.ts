// The operator CLI (docs/running.md#cli): role and announce, against a test database.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, mailedToken } from "./support/fixtures.ts";
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

  it("announce publishes an announcement and says so in one line with its id", async () => {
    const result = await run(
      "src/cli/main.ts",
      ["announce", "--type", "warn", "--title", "Maintenance", "--description", "Down at noon"],
      env,
    );
    expect(result.code).toBe(0);
    const id = /^published warn announcement ([0-9]+): "Maintenance"\n$/.exec(result.stdout)?.[1] as string;
    expect(id).toBeDefined();
    const stored = await server.services.db.announcement.findUnique({ where: { id: BigInt(id) } });
    expect(stored).toMatchObject({ type: "warn", title: "Maintenance", description: "Down at noon" });
  });

  it("has --help for every command", async () => {
    for (const args of [
      ["--help"],
      ["role", "--help"],
      ["announce", "--help"],
      ["account", "create", "--help"],
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

describe("cli account: the operator's first day", () => {
  const cli = (args: string[], input?: string) => run("src/cli/main.ts", ["account", ...args], env, { input });
  const login = (name: string, passphrase: string) =>
    server.request("POST", "/login", { body: { name, passphrase, captcha_token: "ok" } });
  const home = (token: string) => server.request("GET", "/timeline/home", { token });

  it("create makes a verified admin, its passphrase piped on standard input, who logs in at once", async () => {
    const created = await cli(
      ["create", "cliadmin", "--email", "cliadmin@example.com", "--role", "admin", "--verified"],
      "first-admin-passphrase\n",
    );
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    const id = /^created admin @cliadmin@murmur\.test \(id ([0-9]+)\), verified\n$/.exec(created.stdout)?.[1];
    expect(id).toBeDefined();
    const session = await login("cliadmin", "first-admin-passphrase");
    expect(session.status).toBe(200);
    const me = await server.request("GET", "/accounts/cliadmin", { token: session.body.authorization_token });
    expect(me.body).toMatchObject({ id, name: "@cliadmin@murmur.test" });
    // An admin: it may freeze a moderator.
    await account(server, "climoderated", "moderator");
    const frozen = await server.request("PUT", "/accounts/climoderated/freeze", {
      token: session.body.authorization_token,
      body: {},
    });
    expect(frozen.status).toBe(204);
  });

  it("create refuses with one line: no passphrase, a weak one, a taken name", async () => {
    const none = await cli(["create", "clinone", "--email", "clinone@example.com"]);
    expect([none.code, none.stdout, none.stderr]).toEqual([
      1,
      "",
      "error: no passphrase: type it on a terminal, or pipe it on standard input\n",
    ]);
    const weak = await cli(["create", "cliweak", "--email", "cliweak@example.com"], "short\n");
    expect([weak.code, weak.stderr.trim()]).toEqual([
      1,
      "error: a passphrase is 8 to 512 characters, without spaces or control characters",
    ]);
    const taken = await cli(["create", "cliadmin", "--email", "other@example.com"], "first-admin-passphrase\n");
    expect([taken.code, taken.stderr.trim()]).toEqual([1, "error: account name in use"]);
    const badRole = await cli(["create", "cliking", "--email", "k@example.com", "--role", "king"], "a-passphrase\n");
    expect(badRole.code).not.toBe(0);
    expect(badRole.stderr).toMatch(/normal, moderator, admin/);
    for (const name of ["clinone", "cliweak", "cliking"]) {
      expect((await server.request("GET", `/accounts/${name}`)).status).toBe(404);
    }
  });

  it("create without --verified queues the verification mail; verify marks it verified, once", async () => {
    const created = await cli(["create", "cliplain", "--email", "cliplain@example.com"], "plain-passphrase\n");
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(
      /^created normal @cliplain@murmur\.test \(id [0-9]+\), not verified: the verification mail is queued to cliplain@example\.com\n$/,
    );
    expect(await mailedToken(server, "cliplain@example.com")).toMatch(/\S{20}/);
    expect((await login("cliplain", "plain-passphrase")).body).toEqual({ error: "EMAIL_NOT_VERIFIED" });

    const verified = await cli(["verify", "cliplain"]);
    expect([verified.code, verified.stderr]).toEqual([0, ""]);
    expect(verified.stdout).toMatch(/^verified @cliplain@murmur\.test \(id [0-9]+\)\n$/);
    expect((await login("cliplain", "plain-passphrase")).status).toBe(200);
    const again = await cli(["verify", "cliplain"]);
    expect([again.code, again.stderr.trim()]).toEqual([1, "error: cliplain is verified already"]);
    const nobody = await cli(["verify", "nobody"]);
    expect([nobody.code, nobody.stderr.trim()]).toEqual([1, 'error: no account "nobody"']);
  });

  it("reset-passphrase prints a token that sets a new passphrase once, through POST /accounts/{name}/passphrase", async () => {
    const ada = await account(server, "cliada");
    const reset = await cli(["reset-passphrase", "cliada"]);
    expect([reset.code, reset.stderr]).toEqual([0, ""]);
    const [, until, token] =
      /^reset token for @cliada@murmur\.test \(id [0-9]+\), usable once until (\S+): (\S+)\n$/.exec(reset.stdout) ?? [];
    expect(new Date(until).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
    const set = await server.request("POST", "/accounts/cliada/passphrase", {
      body: { token, passphrase: "reset-by-operator" },
    });
    expect(set.status).toBe(204);
    const reused = await server.request("POST", "/accounts/cliada/passphrase", {
      body: { token, passphrase: "reset-once-more" },
    });
    expect([reused.status, reused.body]).toEqual([400, { error: "INVALID_TOKEN" }]);
    expect((await login("cliada", "reset-by-operator")).status).toBe(200);
    expect((await login("cliada", ada.passphrase)).status).not.toBe(200);
    // Its sessions ended with the change.
    expect((await home(ada.token)).status).toBe(401);
  });

  it("freeze makes an account's token 403 YOU_ARE_FROZEN (any role); unfreeze gives it back", async () => {
    const bob = await account(server, "clibob", "admin");
    expect((await home(bob.token)).status).toBe(200);
    const frozen = await cli(["freeze", "clibob"]);
    expect([frozen.code, frozen.stderr]).toEqual([0, ""]);
    expect(frozen.stdout).toBe(`froze @clibob@murmur.test (id ${bob.id})\n`);
    // The server hears of the change from PostgreSQL (its cache of callers).
    await expect.poll(async () => (await home(bob.token)).body).toEqual({ error: "YOU_ARE_FROZEN" });
    expect((await home(bob.token)).status).toBe(403);
    const again = await cli(["freeze", "clibob"]);
    expect([again.code, again.stderr.trim()]).toEqual([1, "error: clibob is frozen already"]);

    const unfrozen = await cli(["unfreeze", "clibob"]);
    expect([unfrozen.code, unfrozen.stdout]).toEqual([0, `unfroze @clibob@murmur.test (id ${bob.id})\n`]);
    await expect.poll(async () => (await home(bob.token)).status).toBe(200);
    const idle = await cli(["unfreeze", "clibob"]);
    expect([idle.code, idle.stdout]).toEqual([0, `@clibob@murmur.test (id ${bob.id}) is not frozen: nothing done\n`]);
  });

  it("silence keeps an account from public notes; unsilence lets it post them again", async () => {
    const cat = await account(server, "clicat");
    const post = () =>
      server.request("POST", "/notes", { token: cat.token, body: { content: "hi", visibility: "public" } });
    const silenced = await cli(["silence", "clicat"]);
    expect([silenced.code, silenced.stdout]).toEqual([0, `silenced @clicat@murmur.test (id ${cat.id})\n`]);
    await expect.poll(async () => (await post()).body).toEqual({ error: "YOU_ARE_SILENCED" });
    const again = await cli(["silence", "clicat"]);
    expect(again.stdout).toBe(`@clicat@murmur.test (id ${cat.id}) is silenced already: nothing done\n`);
    const unsilenced = await cli(["unsilence", "clicat"]);
    expect([unsilenced.code, unsilenced.stdout]).toEqual([0, `unsilenced @clicat@murmur.test (id ${cat.id})\n`]);
    await expect.poll(async () => (await post()).status).toBe(201);
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

describe("cli backup", () => {
  it("writes a relative path into the folder `npm run cli` was typed in, not the installation's", async () => {
    const typedIn = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-typed-in-"));
    try {
      // What npm gives a script it runs from the installation's folder (as `run` does here): its
      // name, and the folder the command was typed in.
      const result = await run("src/cli/main.ts", ["backup", "relative-backup.tar.gz"], {
        ...env,
        npm_lifecycle_event: "cli",
        INIT_CWD: typedIn,
      });
      expect([result.code, result.stderr]).toEqual([0, ""]);
      const written = path.join(typedIn, "relative-backup.tar.gz");
      expect(result.stdout).toContain(` to ${written} (`);
      expect(fs.statSync(written).size).toBeGreaterThan(0);
      expect(fs.existsSync(path.join(ROOT, "relative-backup.tar.gz"))).toBe(false);
    } finally {
      fs.rmSync(typedIn, { recursive: true, force: true });
      fs.rmSync(path.join(ROOT, "relative-backup.tar.gz"), { force: true });
    }
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
