// Mail loses nothing (docs/faults.md#mail): it is queued in the transaction of what causes it and
// sent after the answer by a worker on every instance (src/mail/queue.ts). With SMTP refusing, with
// an SMTP server that never greets or stalls after DATA, with an outbox folder that cannot be
// written, the registration answers at once and its mail arrives once the fault is gone; two
// instances send each mail once, and the mail an instance claimed before it died is sent by
// another. GET /metrics counts it.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { claimMail } from "../src/mail/queue.ts";
import { mailedToken, PASSPHRASE } from "./support/fixtures.ts";
import { freePort } from "./support/net.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";
import { startSilentDoor, startSmtp } from "./support/smtp.ts";

// Retries come quickly here (doubling from 100 ms), not after a minute.
const FAST = { MAIL_RETRY_MS: "100" };
const WAIT = { timeout: 15_000, interval: 50 };

function register(server: TestServer, name: string) {
  return server.request("POST", "/accounts", {
    body: { name, email: `${name}@example.com`, passphrase: PASSPHRASE, captcha_token: "ok" },
  });
}

async function metric(server: TestServer, name: string): Promise<number> {
  const text = (await server.request("GET", "/metrics")).body as string;
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(" ").pop()) : Number.NaN;
}

const tokenIn = (data: string) => /^Verification token: (\S+)$/m.exec(data)?.[1];

describe("the mail queue", () => {
  it("SMTP refusing: the registration answers, the mail waits, and arrives once SMTP is back", async () => {
    const port = await freePort();
    const server = await startTestServer({ ...FAST, SMTP_URL: `smtp://127.0.0.1:${port}` });
    let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined;
    try {
      expect((await register(server, "down1")).status).toBe(200);
      await expect.poll(() => metric(server, "murmur_mail_failed_total"), WAIT).toBeGreaterThanOrEqual(1);
      expect(await metric(server, "murmur_mail_queued")).toBe(1);
      expect(await metric(server, "murmur_mail_sent_total")).toBe(0);

      smtp = await startSmtp(port);
      const arrived = smtp;
      await expect.poll(() => arrived.to("down1@example.com").length, WAIT).toBe(1);
      const token = tokenIn(arrived.to("down1@example.com")[0].data);
      expect((await server.request("POST", "/accounts/down1/verify_email", { body: { token } })).status).toBe(204);
      await expect.poll(() => metric(server, "murmur_mail_queued"), WAIT).toBe(0);
      expect(await metric(server, "murmur_mail_sent_total")).toBe(1);
    } finally {
      await server.close();
      await smtp?.close();
    }
  });

  it("an SMTP server that never greets: answered at once, the attempt times out and is retried", async () => {
    const smtp = await startSmtp();
    const door = await startSilentDoor();
    const server = await startTestServer({
      ...FAST,
      // The greeting awaited 2 s instead of 10 (SMTP_URL's query sets nodemailer's timeouts).
      SMTP_URL: `smtp://127.0.0.1:${door.port}/?greetingTimeout=2000`,
    });
    try {
      expect((await register(server, "silent1")).status).toBe(200);
      // Answered while the mail's first attempt still waits for a greeting: the answer waits for no SMTP.
      await expect.poll(() => door.held.length, WAIT).toBeGreaterThanOrEqual(1);
      const waiting = await server.services.db.mailOutbox.findMany({ select: { attempts: true, claimedBy: true } });
      expect(waiting).toEqual([{ attempts: 0, claimedBy: expect.any(String) }]);
      // It times out and fails; the next attempt finds a server that greets.
      await expect.poll(() => metric(server, "murmur_mail_failed_total"), WAIT).toBeGreaterThanOrEqual(1);
      await expect.poll(() => door.held[0].closed, WAIT).toBe(true);
      door.open(smtp.port);
      await expect.poll(() => smtp.to("silent1@example.com").length, WAIT).toBe(1);
      const token = tokenIn(smtp.to("silent1@example.com")[0].data);
      expect((await server.request("POST", "/accounts/silent1/verify_email", { body: { token } })).status).toBe(204);
    } finally {
      await server.close();
      await door.close();
      await smtp.close();
    }
  });

  it("an SMTP server that stalls after DATA: answered at once, the send times out and is retried", async () => {
    const smtp = await startSmtp();
    smtp.stalling = true;
    // 1.5 s of silence instead of 30.
    const server = await startTestServer({ ...FAST, SMTP_URL: `smtp://127.0.0.1:${smtp.port}/?socketTimeout=1500` });
    try {
      expect((await register(server, "stall1")).status).toBe(200);
      // Answered while the server sits on the mail's data, unanswered.
      await expect.poll(() => smtp.stalled, WAIT).toBeGreaterThanOrEqual(1);
      const waiting = await server.services.db.mailOutbox.findMany({ select: { attempts: true, claimedBy: true } });
      expect(waiting).toEqual([{ attempts: 0, claimedBy: expect.any(String) }]);
      await expect.poll(() => metric(server, "murmur_mail_failed_total"), WAIT).toBeGreaterThanOrEqual(1);
      smtp.stalling = false;
      await expect.poll(() => smtp.to("stall1@example.com").length, WAIT).toBe(1);
      await expect.poll(() => metric(server, "murmur_mail_queued"), WAIT).toBe(0);
    } finally {
      await server.close();
      await smtp.close();
    }
  });

  it("an outbox folder that cannot be written: a failed send, retried until it can", async () => {
    const server = await startTestServer(FAST);
    // A file where the folder goes: no mkdir makes it a folder, not even root's.
    const outbox = path.join(server.dataDir, "outbox");
    fs.writeFileSync(outbox, "not a folder");
    try {
      expect((await register(server, "blocked1")).status).toBe(200);
      await expect.poll(() => metric(server, "murmur_mail_failed_total"), WAIT).toBeGreaterThanOrEqual(1);
      expect(await metric(server, "murmur_mail_queued")).toBe(1);
      fs.rmSync(outbox);
      const token = await mailedToken(server, "blocked1@example.com");
      expect((await server.request("POST", "/accounts/blocked1/verify_email", { body: { token } })).status).toBe(204);
      expect(fs.readdirSync(outbox).filter((name) => name.endsWith(".eml"))).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("gives a mail up at its give_up_at (a day), with a count of it", async () => {
    const server = await startTestServer({ ...FAST, SMTP_URL: `smtp://127.0.0.1:${await freePort()}` });
    try {
      expect((await register(server, "late1")).status).toBe(200);
      await expect.poll(() => metric(server, "murmur_mail_failed_total"), WAIT).toBeGreaterThanOrEqual(1);
      await server.services.db.mailOutbox.updateMany({ data: { giveUpAt: new Date(Date.now() - 1000) } });
      await expect.poll(() => metric(server, "murmur_mail_given_up_total"), WAIT).toBe(1);
      expect(await metric(server, "murmur_mail_queued")).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("two instances send each mail once; what a dead instance claimed is sent when its lease lapses", async () => {
    const port = await freePort();
    const url = await freshDatabase();
    const env = { ...FAST, SMTP_URL: `smtp://127.0.0.1:${port}` };
    const one = await startTestServer(env, url);
    const two = await startTestServer({ ...env, WORKER_ID: "2" }, url);
    let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined;
    try {
      const names = Array.from({ length: 12 }, (_, i) => `pair${i}`);
      for (const [i, name] of names.entries()) expect((await register(i % 2 ? two : one, name)).status).toBe(200);
      // An instance that claims two mails, for a lease of a second, and dies.
      let dead: bigint[] = [];
      await expect
        .poll(async () => {
          dead = dead.concat((await claimMail(one.services.db, "dead", 2 - dead.length, 1)).map((m) => m.id));
          return dead.length;
        }, WAIT)
        .toBe(2);

      smtp = await startSmtp(port);
      const arrived = smtp;
      await expect.poll(() => arrived.received.length, WAIT).toBe(names.length);
      await expect.poll(() => one.services.db.mailOutbox.count(), WAIT).toBe(0);
      // Once each: every recipient, every Message-ID.
      for (const name of names) expect(arrived.to(`${name}@example.com`)).toHaveLength(1);
      const ids = arrived.received.map((m) => /^Message-ID: (\S+)/im.exec(m.data)?.[1]);
      expect(new Set(ids).size).toBe(names.length);
      const sent = (await metric(one, "murmur_mail_sent_total")) + (await metric(two, "murmur_mail_sent_total"));
      expect(sent).toBe(names.length);
    } finally {
      await one.close();
      await two.close();
      await smtp?.close();
    }
  });
});
