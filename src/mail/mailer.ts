// Outgoing mail through nodemailer: SMTP when SMTP_URL is set, else each message is logged and
// written as an .eml file under <DATA_DIR>/outbox/ (CONTRACT 1).
import fs from "node:fs/promises";
import path from "node:path";
import nodemailer from "nodemailer";
import type { Logger } from "pino";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function createMailer(options: { smtpUrl?: string; from: string; outboxDir: string; log: Logger }): Mailer {
  const { smtpUrl, from, outboxDir, log } = options;
  if (smtpUrl) {
    const transport = nodemailer.createTransport(smtpUrl);
    return {
      async send(mail) {
        await transport.sendMail({ from, ...mail });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  let counter = 0;
  return {
    async send(mail) {
      const info = await transport.sendMail({ from, ...mail });
      await fs.mkdir(outboxDir, { recursive: true });
      counter += 1;
      const file = path.join(outboxDir, `${Date.now()}-${process.pid}-${counter}.eml`);
      await fs.writeFile(file, info.message as Buffer);
      log.info({ to: mail.to, subject: mail.subject, file }, "mail written to the outbox");
    },
    close: () => transport.close(),
  };
}
