// What deliveries to each remote server come to (docs/federation.md#delivery): each delivery's
// outcome is counted for /metrics at once, and its POST's result (answered 2xx or not) is kept per
// host in federation_hosts, which `murmur instance list` reads (src/domain/instances/status.ts).
//
// A fan-out to 500 servers is 500 outcomes within seconds: a statement each would be 500 writes
// on the delivery's path. Outcomes are gathered in memory per host and written together, one
// upsert for every host heard of since the last, at most every FLUSH_MS; what an instance killed
// meanwhile had gathered is lost, which costs the operator's view a second, not a delivery.
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";

/** What became of one queued delivery (one activity to one inbox) at one attempt. */
export type DeliveryOutcome =
  /** Its inbox answered 2xx. */
  | "delivered"
  /** It failed and was queued again, for the retry policy's next attempt. */
  | "retried"
  /** Its inbox answered 404 or 410: never tried again. */
  | "permanent_failure"
  /** Its server is paused (the circuit breaker): queued again untried, or after failing. */
  | "held"
  /** Given up: 48 h of retries passed, or it was held for a paused server longer than a week. */
  | "dropped";

export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = [
  "delivered",
  "retried",
  "permanent_failure",
  "held",
  "dropped",
];

/** The POST a delivery made, last (Fedify knocks again with another signature on some refusals). */
export interface DeliveryPost {
  /** Its answer's status; undefined when none came (refused, timed out, guarded). */
  status?: number;
  /** Why it failed, in a line, when it did. */
  error?: string;
}

/** What one instance has gathered for a host since its last write. */
interface Gathered {
  lastSuccess?: Date;
  lastFailure?: Date;
  /** Failures after lastSuccess (all of them without one). */
  failures: number;
  lastError?: string;
}

const FLUSH_MS = 1_000;
/** The longest error kept: a line for the operator, not a response body. */
const ERROR_CHARS = 300;

export class DeliveryRecorder {
  private gathered = new Map<string, Gathered>();
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly services: { db: Db; log: Logger; metrics?: { delivery(outcome: DeliveryOutcome): void } },
    private readonly flushMs = FLUSH_MS,
  ) {}

  /**
   * One delivery's outcome, to inbox `inbox`; `post` is its POST's result when it made one (a
   * delivery held for a paused server makes none, and changes nothing of its host's record).
   */
  record(inbox: string, outcome: DeliveryOutcome, post: DeliveryPost | undefined): void {
    this.services.metrics?.delivery(outcome);
    if (!post) return;
    let host: string;
    try {
      host = new URL(inbox).host;
    } catch {
      return;
    }
    const entry = this.gathered.get(host) ?? { failures: 0 };
    const now = new Date();
    if (post.status !== undefined && post.status >= 200 && post.status < 300) {
      entry.lastSuccess = now;
      entry.failures = 0;
    } else {
      entry.lastFailure = now;
      entry.failures++;
      entry.lastError = (post.error ?? `HTTP ${post.status}`).slice(0, ERROR_CHARS);
    }
    this.gathered.set(host, entry);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs).unref();
  }

  /** Writes what is gathered now (and waits for any write under way). Never rejects. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.gathered;
    this.gathered = new Map();
    // One write at a time: two of one host's rows in flight could land out of order.
    this.writing = this.writing.then(() => (batch.size ? this.write(batch) : undefined));
    return this.writing;
  }

  private async write(batch: Map<string, Gathered>): Promise<void> {
    const hosts = [...batch.keys()];
    const rows = [...batch.values()];
    try {
      // A batch's success resets the count (its failures are those after it); one with none adds
      // to it. Times only move forward, whichever instance wrote last.
      await this.services.db.$executeRaw`
        INSERT INTO federation_hosts AS h (host, last_success_at, last_failure_at, failures, last_error)
        SELECT * FROM unnest(
          ${hosts}::text[], ${rows.map((r) => r.lastSuccess?.toISOString() ?? null)}::timestamptz[],
          ${rows.map((r) => r.lastFailure?.toISOString() ?? null)}::timestamptz[], ${rows.map((r) => r.failures)}::int[],
          ${rows.map((r) => r.lastError ?? null)}::text[])
        ON CONFLICT (host) DO UPDATE SET
          failures = CASE WHEN excluded.last_success_at IS NOT NULL THEN excluded.failures
                          ELSE h.failures + excluded.failures END,
          last_success_at = greatest(h.last_success_at, excluded.last_success_at),
          last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
          last_error = coalesce(excluded.last_error, h.last_error)`;
    } catch (err) {
      this.services.log.warn({ err, hosts: hosts.length }, "federation: delivery outcomes not recorded");
    }
  }
}
