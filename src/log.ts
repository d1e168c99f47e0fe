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
