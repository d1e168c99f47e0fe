// One PostgreSQL connection that LISTENs to channels for as long as it is open, and listens again
// after a failure (a second later, and so on). While it does not listen, announcements are
// missed: `onLost` says so, for whoever must not act as if nothing happened meanwhile.
import pg from "pg";
import type { Logger } from "pino";
import { RepeatedFailure } from "../log.ts";

const RELISTEN_MS = 1_000;

export interface ListenerHandlers {
  notification(channel: string, payload: string): void;
  /** It listens (again): what is announced from now on is heard. */
  listening?(): void;
  /** The connection failed: what was announced from now until it listens again is missed. */
  lost?(): void;
}

export class Listener {
  private client?: pg.Client;
  private relisten?: NodeJS.Timeout;
  private closed = false;
  private readonly failures: RepeatedFailure;

  constructor(
    private readonly databaseUrl: string,
    private readonly channels: string[],
    private readonly handlers: ListenerHandlers,
    log: Logger,
  ) {
    this.failures = new RepeatedFailure(log, `not listening to ${channels.join(", ")}`);
  }

  listen(): void {
    if (this.closed || this.client || this.relisten) return;
    const client = new pg.Client({ connectionString: this.databaseUrl });
    this.client = client;
    client.on("notification", (message) => this.handlers.notification(message.channel, message.payload ?? ""));
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client));
    client
      .connect()
      .then(() => client.query(this.channels.map((channel) => `LISTEN ${channel}`).join("; ")))
      .then(
        () => {
          if (this.client !== client) return;
          this.failures.succeeded();
          this.handlers.listening?.();
        },
        (err: unknown) => this.lost(client, err),
      );
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relisten);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    if (this.closed) return;
    this.failures.failed(err ?? new Error("connection ended"));
    this.handlers.lost?.();
    this.relisten = setTimeout(() => {
      this.relisten = undefined;
      this.listen();
    }, RELISTEN_MS);
    this.relisten.unref();
  }
}
