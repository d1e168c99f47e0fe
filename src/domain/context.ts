// What every domain service receives: the shared services and the caller.
import type { Logger } from "pino";
import type { CaptchaVerifier } from "../captcha.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/client.ts";
import type { SnowflakeGenerator } from "../db/snowflake.ts";
import type { WorkerLease } from "../db/worker-lease.ts";
import type { Mailer } from "../mail/mailer.ts";
import type { SearchIndex } from "../search/meilisearch.ts";
import type { Storage } from "../storage/storage.ts";
import type { DomainError } from "./errors.ts";
import type { CallerAccount, CallerCache } from "./sessions/caller-cache.ts";
import type { TokenIssuer } from "./sessions/tokens.ts";

export interface Services {
  config: Config;
  db: Db;
  ids: SnowflakeGenerator;
  /** The lease of the snowflake worker id, when WORKER_ID is unset (CONTRACT 11). */
  workerLease?: WorkerLease;
  tokens: TokenIssuer;
  /** Recent callers' accounts, kept while PostgreSQL reports every change to them. */
  callers: CallerCache;
  mailer: Mailer;
  captcha: CaptchaVerifier;
  storage: Storage;
  /** Meilisearch, when MEILI_URL is set; search then narrows its candidates with it. */
  search?: SearchIndex;
  log: Logger;
}

/** Who is calling: an account, nobody, or credentials that did not check out. */
export interface Caller {
  account?: CallerAccount;
  /** Set when credentials were sent but are unusable; thrown by whatever reads the caller. */
  error?: DomainError;
  ip?: string;
}

export interface Context extends Services {
  caller: Caller;
}
