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
      // Last, on the line as written: whatever wrote a URL (Fastify's req serializer, an error's
      // message or stack, yoga), its credentials never reach the log.
      hooks: { streamWrite: redactUrlCredentials },
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

// A query parameter in a URL, as it stands in a JSON line: up to `&`, `#`, a quote, an escape or
// white space (a backslash ends it so that an escaped quote is never cut in half).
const QUERY_PARAMETER = /([?&])([^=&#?"\\\s]+)=([^&#"\\\s]*)/g;
// Parameters that carry credentials: `access_token` (REST's live streams and GraphQL's
// EventSource take it, src/rest/mount.ts, src/graphql/mount.ts) and anything named alike.
const CREDENTIAL = /token|secret|passphrase|password|api_?key/i;

function credentialName(name: string): boolean {
  try {
    // `access%5Ftoken` is `access_token` to the query parser.
    return CREDENTIAL.test(decodeURIComponent(name.replaceAll("+", " ")));
  } catch {
    return CREDENTIAL.test(name);
  }
}

/** A log line with the value of every credential query parameter in it replaced. */
export function redactUrlCredentials(line: string): string {
  if (!line.includes("=")) return line;
  return line.replace(QUERY_PARAMETER, (whole, separator: string, name: string, value: string) =>
    value && credentialName(name) ? `${separator}${name}=[Redacted]` : whole,
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
