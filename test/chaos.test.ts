// Faults (docs/faults.md#killed): the server killed with SIGKILL under a write load, then restarted
// on the same data. Every note acknowledged with 201 is there, none is half-written, and the
// account's note counter equals the notes it has. The restart also finds the embedded PostgreSQL
// orphaned by the kill and takes over cleanly.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mailedToken } from "./support/fixtures.ts";
import { wavHeader } from "./support/media.ts";
import { freePort } from "./support/net.ts";
import { start } from "./support/process.ts";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-chaos-"));
fs.chmodSync(dataDir, 0o755);
let child: ChildProcess | undefined;
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const port = await freePort();
const base = `http://127.0.0.1:${port}`;

async function startServer(): Promise<ChildProcess> {
  const server = start("src/main.ts", [], {
    PORT: String(port),
    DATA_DIR: dataDir,
    BCRYPT_COST: "4",
    RATE_LIMIT_MULTIPLIER: "0",
  });
  const deadline = Date.now() + 30_000;
  while (
    !(await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline || server.exitCode !== null) throw new Error("the server did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return server;
}

async function json(method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: {
      ...(body ? { "content-type": "application/json" } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function login(): Promise<string> {
  const answer = await json("POST", "/login", { name: "chaos", passphrase: "chaos-passphrase", captcha_token: "ok" });
  return answer.body.authorization_token;
}

describe("SIGKILL under a write load", () => {
  it("loses no acknowledged note and leaves none half-written", async () => {
    child = await startServer();
    await json("POST", "/accounts", {
      name: "chaos",
      email: "chaos@example.com",
      passphrase: "chaos-passphrase",
      captcha_token: "ok",
    });
    await json("POST", "/accounts/chaos/verify_email", { token: await mailedToken({ dataDir }, "chaos@example.com") });
    let token = await login();

    const acknowledged: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const answer = await json("POST", "/notes", { content: `chaos ${w}-${i} @chaos` }, token).catch(
          () => undefined,
        );
        if (answer?.status === 201) acknowledged.push(answer.body.id);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    child.kill("SIGKILL");
    await once(child, "exit");
    stop = true;
    await Promise.all(writers);
    expect(acknowledged.length).toBeGreaterThan(10);

    child = await startServer();
    token = await login();
    for (const id of acknowledged) {
      expect((await json("GET", `/notes/${id}`, undefined, token)).status, id).toBe(200);
    }
    // The counter moved with every committed note and with no other: page through them all.
    const seen: string[] = [];
    for (let before = ""; ; ) {
      const page = await json(
        "GET",
        `/timeline/accounts/chaos${before ? `?before_id=${before}` : ""}`,
        undefined,
        token,
      );
      if (page.status === 404 || page.body.length === 0) break;
      seen.push(...page.body.map((n: { id: string }) => n.id));
      before = page.body.at(-1).id;
    }
    const account = await json("GET", "/accounts/chaos");
    expect(account.body.note_count).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(acknowledged.length);
    console.log(
      `chaos: ${acknowledged.length} notes acknowledged before SIGKILL, ${seen.length} committed, all acknowledged present`,
    );
  }, 120_000);
});

describe("SIGTERM under load", () => {
  it("lets every request in flight finish", async () => {
    // The server the SIGKILL test restarted, with its account.
    if (!child || child.exitCode !== null) child = await startServer();
    const token = await login();
    const size = 20 * 1024 * 1024;
    const chunk = 1024 * 1024;
    // Each upload sends its first megabytes, then holds the rest until the signal is sent: all
    // eight are surely in flight when it arrives, whatever the machine's speed.
    let release = () => {};
    const signalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    const upload = (n: number) => {
      const boundary = `murmur-chaos-${n}`;
      const head = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\ninflight-${n}.wav\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="inflight-${n}.wav"\r\n` +
            "Content-Type: application/octet-stream\r\n\r\n",
        ),
        wavHeader(size - 44),
      ]);
      let sent = 0;
      let started = () => {};
      const inFlight = new Promise<void>((resolve) => {
        started = resolve;
      });
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent === 0) {
            controller.enqueue(head);
          } else if (sent >= size) {
            controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
            controller.close();
            return;
          } else {
            // Asked for more: the first part has gone out on an accepted connection.
            started();
            await signalled;
            controller.enqueue(new Uint8Array(Math.min(chunk, size - sent)));
          }
          sent += sent === 0 ? 44 : Math.min(chunk, size - sent);
        },
      });
      const status = fetch(`${base}/drive`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: "half",
      } as RequestInit).then((response) => response.status);
      return { inFlight, status };
    };
    const uploads = Array.from({ length: 8 }, (_, n) => upload(n));
    await Promise.all(uploads.map((u) => u.inFlight));
    await new Promise((resolve) => setTimeout(resolve, 200)); // and read by the server
    const exited = once(child, "exit"); // listening before the signal: the exit may come soon
    child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    const statuses = await Promise.all(uploads.map((u) => u.status));
    const [code] = (await exited) as [number | null];
    expect(statuses).toEqual(Array(8).fill(200));
    expect(code).toBe(0);
    console.log(`chaos: SIGTERM with 8 uploads of 20 MB in flight: all answered 200, exit code ${code}`);
  }, 120_000);
});
