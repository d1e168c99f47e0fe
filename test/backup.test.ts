// `murmur backup` and `murmur restore` on the default, embedded PostgreSQL (docs/running.md#cli),
// as an operator runs them: data made through the API of a running server, backed up while it runs
// (the CLI shares its cluster), restored into a fresh data folder, and a server started there finds
// every account, note, list and file, with the counters as they were.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createGunzip } from "node:zlib";
import * as tar from "tar-stream";
import { afterAll, describe, expect, it } from "vitest";
import type { Manifest } from "../src/cli/backup.ts";
import { readMigrations } from "../src/db/migrate.ts";
import { account, PASSPHRASE } from "./support/fixtures.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { image } from "./support/media.ts";
import { run } from "./support/process.ts";
import { accountOn, call } from "./support/remote.ts";
import { startTestS3, TEST_BUCKET } from "./support/s3.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";

// Reachable by the postgres user, so each cluster sits in its data folder itself.
const work = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-backup-"));
fs.chmodSync(work, 0o755);
const archive = path.join(work, "murmur.tar.gz");
const folder = (name: string) => {
  const dir = path.join(work, name);
  fs.mkdirSync(dir, { mode: 0o755 });
  return dir;
};
const instances: Instance[] = [];
afterAll(async () => {
  for (const instance of instances) await instance.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

/** The archive's entries: names in order, contents, and the manifest. */
async function readArchive(
  file: string,
): Promise<{ names: string[]; manifest: Manifest; entries: Map<string, Buffer> }> {
  const extract = tar.extract();
  fs.createReadStream(file).pipe(createGunzip()).pipe(extract);
  const entries = new Map<string, Buffer>();
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    entries.set(entry.header.name, Buffer.concat(chunks));
  }
  const manifest = JSON.parse((entries.get("manifest.json") as Buffer).toString()) as Manifest;
  return { names: [...entries.keys()], manifest, entries };
}

/** An upload's multipart body. */
function multipart(data: Buffer): { payload: Buffer; contentType: string } {
  const boundary = "murmur-backup-boundary";
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="pic.png"\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), data, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

async function login(at: Instance, name: string): Promise<string> {
  const answer = await call(at, "POST", "/login", { name, passphrase: PASSPHRASE, captcha_token: "ok" });
  expect(answer.status).toBe(200);
  return answer.body.authorization_token;
}

describe("backup and restore", () => {
  it("restores into a fresh data folder what a running server held: accounts, notes, reactions, follows, lists, files", async () => {
    const source = await startInstance({}, folder("source"));
    instances.push(source);
    const alice = await accountOn(source, "alice");
    const bob = await accountOn(source, "bob");
    const png = await image("png", 64, 48);
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(png)]), "kept.png");
    const uploaded = await fetch(`${source.url}/drive`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}` },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    const file = (await uploaded.json()) as { id: string };
    const notes: string[] = [];
    for (const [who, body] of [
      [alice, { content: "with a picture", attachment_file_ids: [file.id] }],
      [alice, { content: "second, 'quoted' \\ and\nmultiline\ttabbed" }],
      [bob, { content: "bob's" }],
    ] as const) {
      const created = await call(source, "POST", "/notes", body, who.token);
      expect(created.status).toBe(201);
      notes.push(created.body.id);
    }
    for (const [who, note, emoji] of [
      [bob, notes[0], "👍"],
      [alice, notes[0], "🎉"],
      [alice, notes[2], "👍"],
    ] as const) {
      expect((await call(source, "POST", `/notes/${note}/reaction`, { emoji }, who.token)).status).toBe(200);
    }
    expect((await call(source, "POST", "/accounts/alice/follow", {}, bob.token)).status).toBe(201);
    const list = await call(source, "POST", "/lists", { title: "friends" }, alice.token);
    expect(list.status).toBe(200);
    expect((await call(source, "POST", `/lists/${list.body.id}`, { account_id: [bob.id] }, alice.token)).status).toBe(
      200,
    );

    /** What a client sees of it all on `at`, as alice. */
    const seen = async (at: Instance, token: string) => ({
      alice: (await call(at, "GET", "/accounts/alice", undefined, token)).body,
      bob: (await call(at, "GET", "/accounts/bob", undefined, token)).body,
      notes: await Promise.all(notes.map(async (id) => (await call(at, "GET", `/notes/${id}`, undefined, token)).body)),
      list: (await call(at, "GET", `/lists/${list.body.id}`, undefined, token)).body,
      drive: (await call(at, "GET", "/drive", undefined, token)).body,
    });
    const before = await seen(source, alice.token);
    expect(before.alice).toMatchObject({ followed_count: 1, note_count: 2 });
    expect(before.bob).toMatchObject({ following_count: 1, note_count: 1 });
    expect(before.notes[0]).toMatchObject({ reaction_count: 2, reaction_counts: { "👍": 1, "🎉": 1 } });

    // Taken while the server runs: the CLI shares its cluster, and the server goes on serving.
    const backup = await run("src/cli/main.ts", ["backup", archive], { DATA_DIR: source.dataDir });
    expect(backup.stderr).toBe("");
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(
      /^backed up \d+ rows of \d+ tables and 2 files to .*murmur\.tar\.gz \([0-9.]+ MB\)\n$/,
    );
    expect((await fetch(`${source.url}/readyz`)).status).toBe(200);
    expect(fs.existsSync(`${archive}.partial`)).toBe(false);

    const { names, manifest } = await readArchive(archive);
    expect(names[0]).toBe("manifest.json");
    expect(manifest).toMatchObject({ format: "murmur-backup", version: 1, files: { store: "local", objects: 2 } });
    expect(manifest.migrations.map((m) => m.name)).toEqual(readMigrations().map((m) => m.name));
    const rows = Object.fromEntries(manifest.tables.map((t) => [t.name, t.rows]));
    expect(rows).toMatchObject({ accounts: 2, notes: 3, reactions: 3, follows: 1, lists: 1, list_members: 1 });
    // Accounts come before the notes that name them.
    const order = manifest.tables.map((t) => t.name);
    expect(order.indexOf("accounts")).toBeLessThan(order.indexOf("notes"));
    expect(order.indexOf("notes")).toBeLessThan(order.indexOf("reactions"));
    expect(names).toEqual(expect.arrayContaining([`files/${file.id}`, `files/${file.id}.thumbnail`]));

    // A fresh data folder: the CLI makes its cluster, loads the archive, stops it.
    const target = folder("restored");
    const restore = await run("src/cli/main.ts", ["restore", archive], { DATA_DIR: target });
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    expect(restore.stdout).toMatch(/^restored \d+ rows of \d+ tables and 2 files from /);

    const restored = await startInstance({}, target);
    instances.push(restored);
    const after = await seen(restored, await login(restored, "alice"));
    // Every account, note, reaction count, follow count, list and file as it was: the triggers
    // that keep counts did not count the restored reactions again.
    expect(after).toEqual(before);
    const whole = await fetch(`${restored.url}/files/${file.id}`);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(png)).toBe(true);
    expect((await fetch(`${restored.url}/files/${file.id}/thumbnail`)).status).toBe(200);
    // Bob logs in with his passphrase, and the restored instance goes on making new rows.
    const bobToken = await login(restored, "bob");
    const fresh = await call(restored, "POST", "/notes", { content: "after the restore" }, bobToken);
    expect(fresh.status).toBe(201);
    expect(BigInt(fresh.body.id)).toBeGreaterThan(BigInt(notes[2]));

    // A database with accounts is not overwritten (the CLI shares the running server's cluster).
    const again = await run("src/cli/main.ts", ["restore", archive], { DATA_DIR: target });
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split("\n")).toEqual([
      "error: the database already has data (accounts): restore into an empty database, or add --force to replace what it holds",
    ]);
    expect((await call(restored, "GET", `/notes/${fresh.body.id}`, undefined, bobToken)).status).toBe(200);
    // --force replaces what it holds: the archive's notes, without the one made since.
    const forced = await run("src/cli/main.ts", ["restore", "--force", archive], { DATA_DIR: target });
    expect(forced.code, forced.stderr).toBe(0);
    expect((await call(restored, "GET", `/notes/${fresh.body.id}`, undefined, bobToken)).status).toBe(404);
    expect((await call(restored, "GET", `/notes/${notes[0]}`, undefined, bobToken)).body).toMatchObject({
      reaction_count: 2,
    });
  }, 180_000);

  it("refuses a file that is no backup, with one line", async () => {
    const bogus = path.join(work, "bogus.tar.gz");
    fs.writeFileSync(bogus, "not an archive");
    const dataDir = folder("bogus");
    const result = await run("src/cli/main.ts", ["restore", bogus], { DATA_DIR: dataDir });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([`error: ${bogus} is not a Murmur backup (no manifest first)`]);
    // Told before any database was started: no cluster was made in the data folder.
    expect(fs.readdirSync(dataDir)).toEqual([]);
  }, 60_000);

  it("with S3, names the bucket's keys, which stay there; restores into a freshly migrated database", async () => {
    const s3 = await startTestS3();
    const servers: TestServer[] = [];
    try {
      const server = await startTestServer(s3.env);
      servers.push(server);
      const carol = await account(server, "carol");
      const png = await image("png", 32, 24);
      const { payload, contentType } = multipart(png);
      const uploaded = await server.request("POST", "/drive", {
        token: carol.token,
        payload,
        headers: { "content-type": contentType },
      });
      expect(uploaded.status).toBe(200);
      const id = uploaded.body.id as string;
      const env = { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, ...s3.env };
      const file = path.join(work, "s3.tar.gz");
      const backup = await run("src/cli/main.ts", ["backup", file], env);
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.stdout).toContain(`and 2 files named (they stay in bucket ${TEST_BUCKET})`);
      const { names, manifest, entries } = await readArchive(file);
      expect(manifest.files).toMatchObject({ store: "s3", bucket: TEST_BUCKET, objects: 2 });
      expect(names.filter((name) => name.startsWith("files/"))).toEqual([]);
      expect(entries.get("s3-keys.000001")?.toString()).toBe(`${id}\n${id}.thumbnail\n`);

      const target = await freshDatabase();
      const restore = await run("src/cli/main.ts", ["restore", file], { ...env, DATABASE_URL: target });
      expect(restore.code, restore.stderr).toBe(0);
      expect(restore.stdout).toContain(`2 files named; they stay in bucket ${TEST_BUCKET}`);
      const restored = await startTestServer(s3.env, target);
      servers.push(restored);
      const download = await restored.app.inject({ method: "GET", url: `/files/${id}` });
      expect(download.statusCode).toBe(200);
      expect(download.rawPayload.equals(png)).toBe(true);
      const login = await restored.request("POST", "/login", {
        body: { name: "carol", passphrase: PASSPHRASE, captcha_token: "ok" },
      });
      expect(login.status).toBe(200);
    } finally {
      for (const server of servers) await server.close();
      await s3.close();
    }
  }, 120_000);
});
