// The accounts of recent callers, so that an authenticated request does not read its caller's
// row again (one database round trip of the two or three a timeline page takes). PostgreSQL
// keeps it true: a trigger NOTIFYs every change to an account row (prisma/migrations/
// *_account_changes), whether made here, by another instance or by the CLI, and each instance
// LISTENs and forgets that account. While no connection listens, nothing is kept.
import pg from "pg";
import type { Logger } from "pino";
import type { Account } from "../../generated/prisma/client.ts";

/**
 * The caller's account as authentication gives it: without the counters and time stamp that
 * other accounts' actions move (a note, a follow), which the trigger leaves unnotified so that
 * posting does not empty the cache. Whatever shows them reads the account afresh.
 */
export type CallerAccount = Omit<Account, "followersCount" | "notesCount" | "updatedAt">;

export const ACCOUNT_CHANGES_CHANNEL = "murmur_account_changes";
const MAX_ENTRIES = 10_000;
// A bound on staleness, should a notification ever be lost without the connection failing.
const TTL_MS = 60_000;
const RELISTEN_MS = 1_000;

export class CallerCache {
  private readonly entries = new Map<bigint, { account: CallerAccount; at: number }>();
  /** Bumped by every change heard: a read begun before it must not be kept. */
  private generation = 0;
  private listener?: pg.Client;
  private listening = false;
  private starting = false;
  private closed = false;
  private relisten?: NodeJS.Timeout;

  constructor(
    private readonly databaseUrl: string,
    private readonly read: (id: bigint) => Promise<CallerAccount | null>,
    private readonly log: Logger,
  ) {}

  async get(id: bigint): Promise<CallerAccount | null> {
    const hit = this.entries.get(id);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.account;
    const generation = this.generation;
    const account = await this.read(id);
    if (account && this.listening && generation === this.generation) {
      this.entries.delete(id);
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as bigint);
      this.entries.set(id, { account, at: Date.now() });
    }
    return account;
  }

  /** Forgets one account, or all. */
  forget(id?: bigint): void {
    this.generation++;
    if (id === undefined) this.entries.clear();
    else this.entries.delete(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relisten);
    this.stopListening();
  }

  /**
   * Opens the listening connection (again after RELISTEN_MS should it fail); the cache keeps
   * accounts from the moment it listens.
   */
  listen(): void {
    if (this.starting || this.closed || this.relisten) return;
    this.starting = true;
    const client = new pg.Client({ connectionString: this.databaseUrl });
    this.listener = client;
    client.on("notification", (message) => {
      const payload = message.payload ?? "";
      this.forget(/^[0-9]{1,20}$/.test(payload) ? BigInt(payload) : undefined);
    });
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client));
    client
      .connect()
      .then(() => client.query(`LISTEN ${ACCOUNT_CHANGES_CHANNEL}`))
      .then(
        () => {
          this.starting = false;
          if (this.listener !== client) return;
          // Nothing read before now was watched.
          this.forget();
          this.listening = true;
        },
        (err: unknown) => {
          this.starting = false;
          this.lost(client, err);
        },
      );
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.listener !== client) return;
    this.stopListening();
    if (this.closed) return;
    if (err)
      this.log.warn({ err }, "account changes: not listening; callers are read each time until it listens again");
    this.relisten = setTimeout(() => {
      this.relisten = undefined;
      this.listen();
    }, RELISTEN_MS);
    this.relisten.unref();
  }

  private stopListening(): void {
    const client = this.listener;
    this.listener = undefined;
    this.listening = false;
    this.forget();
    client?.end().catch(() => {});
  }
}
