// What every domain service receives: the shared services and the caller.
import type { Logger } from "pino";
import type { CaptchaVerifier } from "../captcha.ts";
import type { Config } from "../config.ts";
import type { Db, Prisma } from "../db/client.ts";
import type { InstanceLease } from "../db/instance-lease.ts";
import type { ReadRouting } from "../db/replicas.ts";
import type { SnowflakeGenerator } from "../db/snowflake.ts";
import type { WorkerLease } from "../db/worker-lease.ts";
import type { Account, InstancePolicyKind } from "../generated/prisma/client.ts";
import type { Redis } from "../redis.ts";
import type { Storage } from "../storage/storage.ts";
import type { DomainError } from "./errors.ts";
import type { IndexOutcome, SearchNarrowing } from "./search/narrowing.ts";
import type { CallerAccount, CallerCache } from "./sessions/caller-cache.ts";
import type { TokenIssuer } from "./sessions/tokens.ts";

/**
 * What the domain is handed: of the process's services (src/services.ts's AppServices), what the
 * domain uses of each, as small interfaces rather than their classes; its live streams and mail
 * worker not at all. So this type's imports lead to no module that imports it back.
 */
export interface Services {
  config: Config;
  /** The primary; in a request that only reads, maybe a replica (docs/fleet.md#read-replicas). */
  db: Db;
  /** Shared with the fleet, when REDIS_URL is set. */
  redis?: Redis;
  /** Read replicas, when DATABASE_REPLICA_URL is set. */
  replicas?: ReadRouting;
  ids: SnowflakeGenerator;
  /** The lease of the snowflake worker id, when WORKER_ID is unset (docs/fleet.md#worker-ids). */
  workerLease?: WorkerLease;
  /** This process's lease, which its Idempotency-Key claims name (src/db/instance-lease.ts). */
  instance: InstanceLease;
  tokens: TokenIssuer;
  /** Recent callers' accounts, kept while PostgreSQL reports every change to them. */
  callers: CallerCache;
  /** Moderators' policies for remote servers, kept while PostgreSQL reports every change to them. */
  instances: InstancePolicyTable;
  captcha: CaptchaVerifier;
  storage: Storage;
  /** Meilisearch, when MEILI_URL is set; search then narrows its candidates with it. */
  search?: SearchNarrowing;
  log: Logger;
  /** What the domain counts for GET /metrics (src/metrics.ts). */
  metrics: DomainMetrics;
  /** ActivityPub, when FEDERATION is on (src/federation/mount.ts sets it); off, remote names name nothing. */
  federation?: Federator;
}

/** Moderators' policies for remote servers, as this instance holds them (src/domain/instances/policies.ts). */
export interface InstancePolicyTable {
  /** The policy that holds for a server's host (`accounts.host`, a URL's host), if any. */
  of(host: string): Promise<InstancePolicyKind | undefined>;
  /** Every host with a policy. */
  current(): Promise<ReadonlyMap<string, InstancePolicyKind>>;
  /** Reads the table again at the next question (a change made here). */
  forget(): void;
}

/** What the domain asks of federation (src/federation/remote-accounts.ts, src/federation/follows.ts). */
export interface Federator {
  /**
   * The stored account `@name@host` of another server names: resolved and stored on first use,
   * fetched again when older than a day. ACCOUNT_NOT_FOUND when it resolves to nothing.
   */
  remoteAccount(name: string, host: string): Promise<Account>;
  /** A remote account read by id: fetched again off the request's path when older than a day. */
  used(account: Pick<Account, "id" | "host">): void;
  /** A new id for an activity `actorId` (a local account) sends. */
  activityId(actorId: bigint): string;
  /**
   * Writes, in `tx`, what a social act of a local account means to the remote account it
   * concerns: sent once `tx` commits, by whichever process relays it (src/federation/outbox.ts),
   * never if it rolls back.
   */
  send(tx: Prisma.TransactionClient, act: SocialAct): Promise<void>;
  /** The ActivityPub id of local note `noteId` (src/federation/notes.ts). */
  noteUri(noteId: bigint): string;
  /**
   * The id of the `Like` local account `accountId` sends for its reaction `reactionId`
   * (src/federation/reactions.ts): made from the reaction's id, so its `Undo` names it again.
   */
  likeId(accountId: bigint, reactionId: bigint): string;
}

/** An act of the social graph (src/domain/social/service.ts) that a remote server is told of. */
export type SocialAct =
  /** `Follow` (its id stored with the request), from a local follower. */
  | { type: "follow"; followerId: bigint; followeeId: bigint; activityId: string }
  /** `Undo(Follow)`, naming the Follow by its id while it was still a request. */
  | { type: "unfollow"; followerId: bigint; followeeId: bigint; activityId: string | null }
  /** A local account's answer to a remote account's Follow, named by its id when known. */
  | { type: "accept" | "reject"; followerId: bigint; followeeId: bigint; activityId: string | null }
  | { type: "block" | "unblock"; blockerId: bigint; blockedId: bigint };

/** What the domain counts for GET /metrics: src/metrics.ts's Metrics counts it, with the rest. */
export interface DomainMetrics {
  searchIndexQuery(outcome: IndexOutcome): void;
}

/** Who is calling: an account, nobody, or credentials that did not check out. */
export interface Caller {
  account?: CallerAccount;
  /** Set when credentials were sent but are unusable; thrown by whatever reads the caller. */
  error?: DomainError;
  ip?: string;
  /** When the credentials were issued, and expire: a live stream ends then, or once revoked. */
  issuedAt?: Date;
  expiresAt?: Date;
}

export interface Context extends Services {
  caller: Caller;
  /**
   * Whose later reads must see what this request wrote: its caller, for a request that may
   * write; a login names the account it opened a session for.
   */
  readYourWrites?: { account?: bigint };
}
