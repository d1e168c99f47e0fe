// Outgoing mail through nodemailer: SMTP when SMTP_URL is set, else each message is logged and
// written as an .eml file under <DATA_DIR>/outbox/ (docs/running.md#mail). Only the mail queue
// (src/mail/queue.ts) sends: a failure here is thrown, and the queue retries it.
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
  /** Sends the queue's mail `id`; sending the same id again writes the same message. */
  send(mail: Mail, id: bigint): Promise<void>;
  close(): void;
}

/**
 * How long SMTP may take, in ms: a server that refuses is a failure at once, one that never
 * greets or stalls mid-message a failure after these, never a worker held for minutes.
 * Parameters of SMTP_URL's query (`?greetingTimeout=2000`) override them.
 */
export const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function createMailer(options: { smtpUrl?: string; from: string; outboxDir: string; log: Logger }): Mailer {
  const { smtpUrl, from, outboxDir, log } = options;
  const host = new URL(smtpUrl ?? "smtp://localhost").hostname;
  // The same Message-ID for every attempt of one mail: a receiver can tell a repeat, should a
  // send succeed and its deletion from the queue fail.
  const message = (mail: Mail, id: bigint) => ({ from, ...mail, messageId: `<murmur-mail-${id}@${host}>` });
  if (smtpUrl) {
    const transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS });
    return {
      async send(mail, id) {
        await transport.sendMail(message(mail, id));
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  return {
    async send(mail, id) {
      const info = await transport.sendMail(message(mail, id));
      await fs.mkdir(outboxDir, { recursive: true });
      // Named by the queue's id, so files sort in the order mails were queued and a repeat
      // replaces its file; written aside and renamed, so no reader ever sees half of one.
      const file = path.join(outboxDir, `${id.toString().padStart(20, "0")}.eml`);
      const partial = `${file}.partial`;
      try {
        await fs.writeFile(partial, info.message as Buffer);
        await fs.rename(partial, file);
      } catch (err) {
        await fs.rm(partial, { force: true });
        throw err;
      }
      log.info({ mailId: id.toString(), to: mail.to, subject: mail.subject, file }, "mail written to the outbox");
    },
    close: () => transport.close(),
  };
}
