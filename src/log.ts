// The process logger (pino).
import pino, { type Logger } from "pino";

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "murmur" }, redact: ["req.headers.authorization"] });
}
