// The process logger (pino). A line logged while a request runs carries its request id and, once
// known, its caller's account id, whichever logger wrote it (the request's own, or the services'
// loggers of the mailer, the search index, yoga).
import { AsyncLocalStorage } from "node:async_hooks";
import pino, { type DestinationStream, type Logger } from "pino";

/** What every line logged during a request says of it. */
export interface RequestLogFields {
  reqId: string;
  accountId?: string;
}

const CHINDINGS = pino.symbols.chindingsSym;

/** The fields of the request running now (src/http/request-log.ts enters it). */
export const requestLogFields = new AsyncLocalStorage<RequestLogFields>();

/** `destination`: where lines go (standard output by default; the tests read them). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "murmur" },
      redact: ["req.headers.authorization"],
      mixin(_line, _level, logger) {
        const fields = requestLogFields.getStore();
        // The request's own logger has them bound already (Fastify's child of this one); its
        // bindings are read as pino keeps them, a JSON fragment, not parsed on every line.
        if (!fields || String((logger as unknown as Record<symbol, unknown>)[CHINDINGS]).includes('"reqId":')) {
          return {};
        }
        return fields.accountId ? { reqId: fields.reqId, accountId: fields.accountId } : { reqId: fields.reqId };
      },
    },
    destination,
  );
}

/**
 * The failures of a job that retries (every second, every few seconds) while something it needs
 * is down: the first is logged, the next ones not until it works again, which is said too. An
 * outage is one line per job, not a stack trace a second.
 */
export class RepeatedFailure {
  private failing = false;

  constructor(
    private readonly log: Logger,
    private readonly what: string,
  ) {}

  failed(err: unknown, level: "warn" | "error" = "warn", fields: Record<string, unknown> = {}): void {
    if (this.failing) return;
    this.failing = true;
    this.log[level]({ err, ...fields }, `${this.what}; retrying, quietly until it works again`);
  }

  succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info(`${this.what}: works again`);
  }
}
