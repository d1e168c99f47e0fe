// The federation outbox (table federation_outbox, prisma/migrations/20261127181500_federation_outbox):
// what a local account's act is to send to another server, written in the transaction of the act
// itself, so that a process dying between the commit and the queue loses nothing
// (docs/federation.md#delivery: never lost across restarts or instance deaths).
//
// A relay runs in every process that works the federation queue. It claims a row with
// FOR UPDATE SKIP LOCKED in a transaction of its own, hands it to deliver (Fedify enqueues it in
// federation_messages) with the queue's statements joining that transaction (enqueueIn), and
// deletes the row in it: the row is queued exactly once however many relays run, and a relay
// that dies midway rolls both back, leaving the row to another. Only the oldest row of a sender
// is claimed, so one account's activities are queued in the order its acts committed, which the
// queue's ordering key keeps from there. Relays wake on the NOTIFY of a row's commit and poll
// for what they missed. A row whose enqueue fails waits (doubling from FEDERATION_RETRY_MS to an
// hour) and is dropped with an error line after as long as a delivery is retried (48 h).
//
// At each poll a relay also sends again the Follows whose Accept never came
// (src/federation/follow-repair.ts): whichever process works the queue, once across a fleet.
import type { Context, Federation } from "@fedify/fedify";
import type { Activity, Recipient } from "@fedify/fedify/vocab";
import type pg from "pg";
import type { Prisma } from "../db/client.ts";
import { Listener } from "../db/listener.ts";
import { newPool } from "../db/pool.ts";
import { RepeatedFailure } from "../log.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { deliver, RETRY_FOR_MS } from "./delivery.ts";
import { resendLostFollows } from "./follow-repair.ts";
import { enqueueIn } from "./message-queue.ts";

const CHANNEL = "murmur_federation_outbox";
const MAX_RETRY_MS = 3_600_000;
const POLL_MS = 5_000;
/** A relay of one row running longer fails (and is tried again): a hung one must not stop the rest. */
const RELAY_TIMEOUT_MS = 60_000;

/** One activity to send: what it is, from which local account, to which remote one. */
export interface OutboxEntry {
  /** The act it comes of (src/federation/follows.ts reads it back). */
  kind: string;
  /** The local account sending it. */
  sender: bigint;
  /** The remote account it goes to. */
  recipient: bigint;
  /** The activity's id, fixed when written: sent twice, it is one activity to its receiver. */
  activityId: string;
  /** The id of the activity it answers or undoes, when known. */
  objectId: string | null;
}

export interface OutboxRow extends OutboxEntry {
  id: bigint;
  /** More remote accounts it goes to (a note's: src/domain/notes/federation.ts). */
  recipients: bigint[];
  attempts: number;
  createdAt: Date;
}

/** Writes `entry` in `tx`: relayed once `tx` commits, never if it rolls back. */
export async function writeOutbox(tx: Prisma.TransactionClient, entry: OutboxEntry): Promise<void> {
  await tx.federationOutbox.create({ data: entry });
}

/**
 * What a row sends, and to whom; null when there is nothing to send any more (its recipient is gone).
 * `sender` is the actor that signs it when not the row's account (the instance actor's Flag).
 */
export type OutboxActivity = (
  ctx: Context<FederationData>,
  row: OutboxRow,
) => Promise<{ recipients: Recipient | Recipient[]; activity: Activity; sender?: string } | null>;

interface RawRow {
  id: string;
  kind: string;
  sender: string;
  recipient: string;
  activity_id: string;
  object_id: string | null;
  recipients: string[];
  attempts: number;
  created_at: Date;
}

export interface OutboxRelayOptions {
  /** Wait before a failed row's first retry (config.federationRetryMs), doubling to an hour. */
  retryMs?: number;
  pollMs?: number;
  /** The waits before each resend of an unanswered Follow (default: 1 h, 6 h, 24 h). */
  followResendMs?: readonly number[];
}

export class OutboxRelay {
  private readonly pool: pg.Pool;
  private readonly ctx: Context<FederationData>;
  private readonly failures: RepeatedFailure;
  private readonly retryMs: number;
  private readonly pollMs: number;
  private readonly followResendMs?: readonly number[];
  private readonly resendFailures: RepeatedFailure;
  private resending?: Promise<void>;
  private listener?: Listener;
  private poll?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    federation: Federation<FederationData>,
    private readonly services: AppServices,
    private readonly activityOf: OutboxActivity,
    options: OutboxRelayOptions = {},
  ) {
    this.ctx = federation.createContext(new URL(services.config.publicUrl), services);
    this.retryMs = options.retryMs ?? services.config.federationRetryMs;
    this.pollMs = options.pollMs ?? POLL_MS;
    this.followResendMs = options.followResendMs;
    this.resendFailures = new RepeatedFailure(services.log, "federation: unanswered follows not sent again");
    this.failures = new RepeatedFailure(services.log, "federation outbox not relayed");
    // One relay runs one transaction at a time; the second connection counts a failure after it.
    this.pool = newPool({
      connectionString: services.databaseUrl,
      max: 2,
      // A statement of a relay's transaction waits no longer than a relay may run.
      statement_timeout: RELAY_TIMEOUT_MS,
    });
  }

  /** Relays what is written now and whenever more is, until stopped. */
  start(): void {
    const kick = () => this.kick();
    this.listener = new Listener(
      this.services.databaseUrl,
      [CHANNEL],
      { notification: kick, listening: kick },
      this.services.log,
    );
    this.listener.listen();
    this.poll = setInterval(() => {
      kick();
      this.resendFollows();
    }, this.pollMs);
    this.poll.unref();
    kick();
  }

  /** Stops relaying; the row being relayed is finished (or rolled back) first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    await this.listener?.close();
    await this.resending;
    await this.running;
    await this.pool.end();
  }

  /** Looks for rows now (once more after the current pass, when one runs). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err) => this.failures.failed(err))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Sends again the Follows due now, unless a pass runs; what it writes wakes the relays. */
  private resendFollows(): void {
    if (this.stopped || this.resending) return;
    this.resending = resendLostFollows(this.services, this.followResendMs)
      .then(
        () => this.resendFailures.succeeded(),
        (err) => this.resendFailures.failed(err),
      )
      .finally(() => {
        this.resending = undefined;
      });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.relayOne()));
  }

  /** Claims one row and relays it; false when none was due. */
  async relayOne(): Promise<boolean> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A connection the server ends (its PostgreSQL stopped) while no query of it runs is an 'error'
    // of the client, which the pool no longer hears once it is handed out: unheard, it ended the
    // process. Heard, the next query fails.
    const ended = (err: Error) => {
      broken = err;
    };
    client.on("error", ended);
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<RawRow>(
        `SELECT o.id, o.kind, o.sender, o.recipient, o.activity_id, o.object_id, o.recipients, o.attempts, o.created_at
         FROM federation_outbox o
         WHERE o.run_at <= now()
           AND NOT EXISTS (SELECT 1 FROM federation_outbox e WHERE e.sender = o.sender AND e.id < o.id)
         ORDER BY o.run_at, o.id
         LIMIT 1
         FOR UPDATE SKIP LOCKED`,
      );
      if (!rows[0]) {
        await client.query("COMMIT");
        return false;
      }
      const row = parseRow(rows[0]);
      try {
        await withTimeout(
          enqueueIn(client, () => this.relay(row)),
          RELAY_TIMEOUT_MS,
        );
        await client.query("DELETE FROM federation_outbox WHERE id = $1", [row.id]);
        await client.query("COMMIT");
        this.failures.succeeded();
      } catch (err) {
        if (err instanceof RelayTimeout) {
          // What still runs may yet enqueue on this client: it is closed instead of given back,
          // which rolls its transaction back and fails whatever comes later.
          broken = err;
        } else {
          await client.query("ROLLBACK");
        }
        await this.failed(row, err);
      }
      return true;
    } catch (err) {
      // The connection is not given back to the pool in an unknown state.
      broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.off("error", ended);
      client.release(broken);
    }
  }

  private async relay(row: OutboxRow): Promise<void> {
    const sending = await this.activityOf(this.ctx, row);
    if (sending) await deliver(this.ctx, sending.sender ?? row.sender.toString(), sending.recipients, sending.activity);
  }

  private async failed(row: OutboxRow, err: unknown): Promise<void> {
    if (Date.now() - row.createdAt.getTime() >= RETRY_FOR_MS) {
      this.services.log.error(
        { err, kind: row.kind, activity: row.activityId, attempts: row.attempts + 1 },
        "federation outbox: activity dropped, it could not be queued since it was written",
      );
      await this.pool.query("DELETE FROM federation_outbox WHERE id = $1", [row.id]);
      return;
    }
    this.failures.failed(err, "warn", { activity: row.activityId });
    const delayMs = Math.min(MAX_RETRY_MS, this.retryMs * 2 ** Math.min(row.attempts, 32));
    await this.pool.query(
      `UPDATE federation_outbox SET attempts = attempts + 1, run_at = now() + make_interval(secs => $2)
       WHERE id = $1`,
      [row.id, delayMs / 1000],
    );
  }
}

function parseRow(raw: RawRow): OutboxRow {
  return {
    id: BigInt(raw.id),
    kind: raw.kind,
    sender: BigInt(raw.sender),
    recipient: BigInt(raw.recipient),
    activityId: raw.activity_id,
    objectId: raw.object_id,
    recipients: raw.recipients.map(BigInt),
    attempts: raw.attempts,
    createdAt: raw.created_at,
  };
}

class RelayTimeout extends Error {}

async function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RelayTimeout(`federation outbox: relaying took over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
