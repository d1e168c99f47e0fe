// Verification mail over real SMTP (an smtp-server started here), and the outbox fallback.
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./support/server.ts";

interface Received {
  from: string;
  to: string[];
  data: string;
}

const received: Received[] = [];
let smtp: SMTPServer;
let server: TestServer;

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, session, callback) {
      let data = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        data += chunk;
      });
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          data,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const { port } = smtp.server.address() as AddressInfo;
  server = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: "Murmur <noreply@murmur.test>" });
});

afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

describe("mail", () => {
  it("sends the verification token over SMTP, and the token verifies the account", async () => {
    const answer = await server.request("POST", "/accounts", {
      body: { name: "smtp1", email: "smtp1@example.com", passphrase: "correct-horse-battery", captcha_token: "ok" },
    });
    expect(answer.status).toBe(200);
    const mail = received.find((m) => m.to.includes("smtp1@example.com"));
    expect(mail?.from).toBe("noreply@murmur.test");
    const token = /^Verification token: (\S+)$/m.exec(mail?.data.replace(/=\r?\n/g, "") ?? "")?.[1];
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
