// The mail queue: every mail is a row of mail_outbox, written in the transaction of what causes
// it, so a request answers without waiting for SMTP and a mail is lost neither to an SMTP
// outage nor to a crash. A worker on every instance sends what is due: woken by the row's
// NOTIFY at commit (a poll covers a lost LISTEN and the retries), it claims a batch with
// FOR UPDATE SKIP LOCKED under a lease it renews while sending, so no two instances send one
// mail at once and the mails of an instance that died are sent by another once its lease lapses.
// A sent mail is deleted; a failed one is tried again with exponential backoff (MAIL_RETRY_MS,
// doubling up to an hour) until its give_up_at (a day; a reset token's hour), then deleted
// with an error line. A send that succeeds but whose deletion fails is sent again (the same
// Message-ID): at least once, and once but for that.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import type { Db, Prisma } from "../db/client.ts";
import { Listener } from "../db/listener.ts";
import { RepeatedFailure } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { Mail, Mailer } from "./mailer.ts";

type Tx = Prisma.TransactionClient;

const CHANNEL = "murmur_mail_queued";
/** Longer than a send may take (src/mail/mailer.ts SMTP_TIMEOUTS), and renewed while it runs. */
export const LEASE_SECONDS = 120;
const BATCH = 10;
/** Batches sent at once by one instance: a stalled SMTP server holds a few, not every mail. */
const CONCURRENCY = 4;
const MAX_BACKOFF_MS = 3_600_000;
const POLL_MS = 5_000;
/** How long a shutdown waits for sends under way; their leases lapse for another instance. */
const STOP_WAIT_MS = 5_000;

/** Queues a mail in `tx`: sent once `tx` commits, never if it rolls back. Answers its id. */
export async function queueMail(tx: Tx, mail: Mail, giveUpAt?: Date): Promise<bigint> {
  const row = await tx.mailOutbox.create({
    data: { recipient: mail.to, subject: mail.subject, body: mail.text, giveUpAt },
    select: { id: true },
  });
  return row.id;
}

/**
 * Queues a mail to the e-mail address of `accountId`, if it exists, in one statement whichever
 * the case (the passphrase reset's rule: nobody and an account send the same statements).
 */
export async function queueMailToAccount(
  tx: Tx,
  accountId: bigint,
  mail: Omit<Mail, "to">,
  giveUpAt: Date,
): Promise<bigint | undefined> {
  const [row] = await tx.$queryRaw<{ id: bigint }[]>`
    INSERT INTO mail_outbox (recipient, subject, body, give_up_at)
    SELECT email, ${mail.subject}, ${mail.text}, ${giveUpAt} FROM accounts WHERE id = ${accountId}
    RETURNING id`;
  return row?.id;
}

export interface ClaimedMail {
  id: bigint;
  recipient: string;
  subject: string;
  body: string;
  attempts: number;
}

/** Claims up to `limit` due mails for `claim` for `leaseSeconds`. */
export function claimMail(db: Db, claim: string, limit: number, leaseSeconds: number): Promise<ClaimedMail[]> {
  return db.$queryRaw<ClaimedMail[]>`
    UPDATE mail_outbox SET claimed_by = ${claim}, next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    WHERE id IN (
      SELECT id FROM mail_outbox WHERE next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, recipient, subject, body, attempts`;
}

export interface MailWorkerOptions {
  db: Db;
  mailer: Mailer;
  log: Logger;
  /** Wait before the first retry (config.mailRetryMs). */
  retryMs: number;
  /** Read when a mail is sent or fails (set after the worker is built). */
  metrics: () => Metrics | undefined;
}

export class MailWorker {
  private readonly name = `${os.hostname()}:${process.pid}`;
  private readonly failures: RepeatedFailure;
  private readonly running = new Set<Promise<void>>();
  private listener?: Listener;
  private poll?: NodeJS.Timeout;
  private again = false;
  private stopped = false;

  constructor(private readonly options: MailWorkerOptions) {
    this.failures = new RepeatedFailure(options.log, "mail not sent");
  }

  /** Sends what is due now and whenever more is queued, until stopped. */
  start(databaseUrl: string): void {
    const kick = () => this.kick();
    this.listener = new Listener(databaseUrl, [CHANNEL], { notification: kick, listening: kick }, this.options.log);
    this.listener.listen();
    this.poll = setInterval(kick, Math.min(POLL_MS, this.options.retryMs));
    this.poll.unref();
    kick();
  }

  /** Looks for due mail now (another batch beside those being sent, up to CONCURRENCY). */
  kick(): void {
    if (this.stopped) return;
    if (this.running.size >= CONCURRENCY) {
      this.again = true;
      return;
    }
    const run: Promise<void> = this.drain()
      .catch((err) => this.failures.failed(err))
      .finally(() => {
        this.running.delete(run);
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
    this.running.add(run);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    await this.listener?.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.running),
      new Promise((resolve) => {
        timer = setTimeout(resolve, STOP_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    this.options.mailer.close();
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.sendOnce()) > 0);
  }

  /** Claims one batch and tries each of its mails; answers how many it claimed. */
  async sendOnce(): Promise<number> {
    const { db } = this.options;
    const claim = `${this.name}:${randomUUID()}`;
    const claimed = await claimMail(db, claim, BATCH, LEASE_SECONDS);
    if (claimed.length === 0) return 0;
    const ids = claimed.map((mail) => mail.id);
    const renew = setInterval(
      () =>
        void db.$executeRaw`
          UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
          WHERE id = ANY(${ids}) AND claimed_by = ${claim}`.catch(() => {}),
      (LEASE_SECONDS * 1000) / 3,
    );
    // Every attempt ends before the lease stops being renewed, whichever fails.
    const ended = await Promise.allSettled(claimed.map((mail) => this.attempt(mail, claim)));
    clearInterval(renew);
    const failed = ended.find((one) => one.status === "rejected");
    if (failed) throw failed.reason;
    return claimed.length;
  }

  private async attempt(mail: ClaimedMail, claim: string): Promise<void> {
    const { db, mailer } = this.options;
    try {
      await mailer.send({ to: mail.recipient, subject: mail.subject, text: mail.body }, mail.id);
    } catch (err) {
      await this.failed(mail, claim, err);
      return;
    }
    this.options.metrics()?.mailSent();
    this.failures.succeeded();
    await db.$executeRaw`DELETE FROM mail_outbox WHERE id = ${mail.id} AND claimed_by = ${claim}`;
  }

  private async failed(mail: ClaimedMail, claim: string, err: unknown): Promise<void> {
    const { db, log } = this.options;
    this.options.metrics()?.mailFailed();
    const gone = await db.$queryRaw<{ id: bigint }[]>`
      DELETE FROM mail_outbox WHERE id = ${mail.id} AND claimed_by = ${claim} AND give_up_at <= now() RETURNING id`;
    if (gone.length) {
      this.options.metrics()?.mailGivenUp();
      log.error(
        { err, mailId: mail.id.toString(), to: mail.recipient, subject: mail.subject, attempts: mail.attempts + 1 },
        "mail given up: not sent since it was queued (the user can ask for another)",
      );
      return;
    }
    this.failures.failed(err, "warn", { mailId: mail.id.toString() });
    const delayMs = Math.min(MAX_BACKOFF_MS, this.options.retryMs * 2 ** mail.attempts);
    const reason = err instanceof Error ? err.message : String(err);
    await db.$executeRaw`
      UPDATE mail_outbox
      SET attempts = attempts + 1, claimed_by = NULL, last_error = ${reason.slice(0, 1000)},
          next_attempt_at = least(give_up_at, now() + ${delayMs}::float8 * interval '1 millisecond')
      WHERE id = ${mail.id} AND claimed_by = ${claim}`;
  }
}
