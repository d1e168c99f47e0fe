// Verification mail over real SMTP (an smtp-server started here), and the outbox fallback.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailedToken } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { startSmtp, type TestSmtp } from "./support/smtp.ts";

let smtp: TestSmtp;
let server: TestServer;

beforeAll(async () => {
  smtp = await startSmtp();
  server = await startTestServer({
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    MAIL_FROM: "Murmur <noreply@murmur.test>",
  });
});

afterAll(async () => {
  await server.close();
  await smtp.close();
});

describe("mail", () => {
  it("sends the verification token over SMTP, and the token verifies the account", async () => {
    const answer = await server.request("POST", "/accounts", {
      body: { name: "smtp1", email: "smtp1@example.com", passphrase: "correct-horse-battery", captcha_token: "ok" },
    });
    expect(answer.status).toBe(200);
    // Sent by the queue after the answer (test/mail-queue.test.ts).
    await expect.poll(() => smtp.to("smtp1@example.com").length).toBe(1);
    const [mail] = smtp.to("smtp1@example.com");
    expect(mail.from).toBe("noreply@murmur.test");
    const token = /^Verification token: (\S+)$/m.exec(mail.data)?.[1];
    expect(token).toBeDefined();
    const verified = await server.request("POST", "/accounts/smtp1/verify_email", { body: { token } });
    expect(verified.status).toBe(204);
    // With SMTP configured nothing is written to the outbox.
    expect(fs.existsSync(path.join(server.dataDir, "outbox"))).toBe(false);
  });

  it("writes each mail as an .eml file in the outbox when SMTP_URL is unset", async () => {
    const local = await startTestServer();
    try {
      await local.request("POST", "/accounts", {
        body: {
          name: "outbox1",
          email: "outbox1@example.com",
          passphrase: "correct-horse-battery",
          captcha_token: "ok",
        },
      });
      await mailedToken(local, "outbox1@example.com");
      const files = fs.readdirSync(path.join(local.dataDir, "outbox"));
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\.eml$/);
      const text = fs.readFileSync(path.join(local.dataDir, "outbox", files[0]), "utf8");
      expect(text).toMatch(/^To: outbox1@example\.com/m);
      expect(text).toMatch(/^Verification token: \S+$/m);
    } finally {
      await local.close();
    }
  });
});
