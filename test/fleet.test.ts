// Two Murmur processes as a fleet (issue 17, CONTRACT 11): one PostgreSQL, one S3 bucket (s3rver),
// one token key, each its own DATA_DIR and no WORKER_ID. Each step of a scenario goes to another
// instance: register on A, verify and log in on B, upload on A and download on B (whole, Range,
// thumbnail), react on B and see it on A, and notes created through both at once with distinct
// ids, minted under distinct leased worker ids.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailedToken } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { freePort } from "./support/net.ts";
import { start } from "./support/process.ts";
import { startTestS3, type TestS3 } from "./support/s3.ts";
import { freshDatabase } from "./support/server.ts";

interface Instance {
  url: string;
  dataDir: string;
  child: ChildProcess;
}

let s3: TestS3;
const instances: Instance[] = [];

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-fleet-"));
  const port = await freePort();
  const child = start("src/main.ts", [], {
    ...env,
    PORT: String(port),
    DATA_DIR: dataDir,
    BCRYPT_COST: "4",
    RATE_LIMIT_MULTIPLIER: "0",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("an instance did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url, dataDir, child };
}

beforeAll(async () => {
  s3 = await startTestS3();
  const env = { ...s3.env, DATABASE_URL: await freshDatabase(), TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") };
  instances.push(...(await Promise.all([startInstance(env), startInstance(env)])));
}, 120_000);

afterAll(async () => {
  for (const { child, dataDir } of instances) {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  await s3?.close();
});

async function call(at: Instance, method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${at.url}${url}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

describe("two instances as one server", () => {
  it("register on A, verify and log in on B; upload on A, download on B; react on B, see it on A", async () => {
    const [a, b] = instances;
    const email = "fleet@example.com";
    const registered = await call(a, "POST", "/accounts", {
      name: "fleet",
      email,
      passphrase: "correct-horse-battery",
      captcha_token: "ok",
    });
    expect(registered.status).toBe(200);
    const verified = await call(b, "POST", "/accounts/fleet/verify_email", { token: mailedToken(a, email) });
    expect(verified.status).toBe(204);
    const login = await call(b, "POST", "/login", {
      name: "fleet",
      passphrase: "correct-horse-battery",
      captcha_token: "ok",
    });
    expect(login.status).toBe(200);
    const token = login.body.authorization_token;

    const png = await image("png", 64, 48);
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(png)]), "fleet.png");
    const uploaded = await fetch(`${a.url}/drive`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    const file = (await uploaded.json()) as { id: string };
    const whole = await fetch(`${b.url}/files/${file.id}`);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(png)).toBe(true);
    const part = await fetch(`${b.url}/files/${file.id}`, { headers: { range: "bytes=0-7" } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(png.subarray(0, 8))).toBe(true);
    expect((await fetch(`${b.url}/files/${file.id}/thumbnail`)).status).toBe(200);

    const note = await call(a, "POST", "/notes", { content: "from A", attachment_file_ids: [file.id] }, token);
    expect(note.status).toBe(201);
    expect((await call(b, "POST", `/notes/${note.body.id}/reaction`, { emoji: "👍" }, token)).status).toBe(200);
    const seen = await call(a, "GET", `/notes/${note.body.id}`);
    expect(seen.body.reaction_count).toBe(1);
    expect(seen.body.reactions).toEqual([{ emoji: "👍", reacted_by: registered.body.id }]);

    // Notes through both at once: every id distinct, minted under two distinct leased worker ids.
    const created = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call(instances[i % 2], "POST", "/notes", { content: `burst ${i}` }, token)),
    );
    expect(created.map((c) => c.status)).toEqual(created.map(() => 201));
    const ids = created.map((c) => BigInt(c.body.id));
    expect(new Set(ids).size).toBe(60);
    const workers = new Set(ids.map((id) => (id >> 12n) & 1023n));
    expect(workers.size).toBe(2);
  }, 60_000);
});
