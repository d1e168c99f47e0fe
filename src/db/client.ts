// The Prisma client over node-postgres (Prisma 7's driver-adapter model).
import { createHash } from "node:crypto";
import v8 from "node:v8";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { DomainError, type ErrorCode } from "../domain/errors.ts";
import { type Prisma, PrismaClient } from "../generated/prisma/client.ts";
import { newPool } from "./pool.ts";

// Prisma's query compiler is WebAssembly, run when a query's shape is not in its plan cache.
// V8 compiles it with Liftoff, then again with TurboFan in the background: ~50 MB more resident
// memory for every process, to make a compilation of 1.4 ms one of 1.6 (measured on an
// idle instance's RSS). Set before the first query compiles the module.
v8.setFlagsFromString("--liftoff-only");

export type Db = PrismaClient;
export { Prisma } from "../generated/prisma/client.ts";

/**
 * `accountsWritten` hears of every account row this client updates or deletes (`undefined`:
 * maybe several), as soon as the statement has run.
 */
export function createDb(databaseUrl: string, accountsWritten: (id?: bigint) => void, poolSize = 20): Db {
  // The pool is made here, not by the adapter, so that /metrics can tell how it is used; the
  // adapter still ends it at $disconnect.
  const pool = newPool({ connectionString: databaseUrl, max: poolSize });
  const adapter = new PrismaPg(pool, {
    // Named statements: each connection parses and plans a statement once, then only binds
    // and executes it (PostgreSQL keeps the plan, or a generic one when that is as good).
    statementNameGenerator: (query) => nameOf(query.sql),
    disposeExternalPool: true,
  });
  // A burst of writes queues for a pooled connection rather than failing after Prisma's default
  // 2 s; past 10 s the request is answered 503 (src/http/errors.ts).
  const db = retryingTransactions(
    announcingAccountWrites(
      new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 10_000 } }),
      accountsWritten,
    ),
  );
  pools.set(db, pool);
  return db;
}

/** The pool under each client createDb made (not a transaction's client, nor one made elsewhere). */
const pools = new WeakMap<object, pg.Pool>();

// What Prisma's $queryRaw gives for these types; node-postgres reads json and timestamptz alike.
const INT8 = 20;
const INT8_ARRAY = 1016;
const rowTypes = {
  getTypeParser: (oid: number, format?: "text" | "binary") => {
    if (oid === INT8) return BigInt;
    if (oid === INT8_ARRAY) return int8Array;
    return pg.types.getTypeParser(oid as never, format);
  },
} as pg.CustomTypesConfig;

/** One dimension of integers, no NULL: the form of every bigint[] our statements select. */
const FLAT_INTEGERS = /^\{-?[0-9]+(?:,-?[0-9]+)*\}$/;

/**
 * A bigint[] column as BigInts. The live hub's rule answers each read with arrays of up to a
 * thousand viewers: node-postgres's general array parser took ~0.7 ms for each (5x the split).
 */
function int8Array(text: string): unknown[] {
  if (text === "{}") return [];
  if (FLAT_INTEGERS.test(text)) return text.slice(1, -1).split(",").map(BigInt);
  return (pg.types.getTypeParser(INT8_ARRAY as never, "text")(text) as string[]).map(BigInt);
}

/**
 * The rows of a read-only `query`, as `db.$queryRaw` gives them, sent through node-postgres
 * directly when `db` is one createDb made: for the statements every timeline page and search
 * runs, Prisma's runtime around the statement (arguments, result rows re-typed column by
 * column) cost a sixth of the server's CPU per page (bench/README.md). Any other client
 * (a transaction's, a test's counting one) runs it through Prisma.
 * test/raw-rows.test.ts holds the two ways equal.
 */
export async function queryRows<T>(db: Db | Prisma.TransactionClient, query: Prisma.Sql): Promise<T[]> {
  const pool = pools.get(db);
  if (!pool) return db.$queryRaw<T[]>(query);
  const { rows } = await pool.query<T & pg.QueryResultRow>(configOf(query));
  return rows;
}

/**
 * `db` with the statements queryRows sends through it on a pool of their own, at most `size`
 * connections of `databaseUrl`; its Prisma queries still share db's pool. For work that must not
 * wait behind requests for a connection: the live hub's journal reads and deliveries, which the
 * request pool kept 2,000 streams waiting for under load (bench/README.md). Not a second client:
 * a PrismaClient costs ~12 MB of resident memory, used or not.
 */
export function withOwnPool(db: Db, databaseUrl: string, size: number): { db: Db; end(): Promise<void> } {
  const pool = newPool({ connectionString: databaseUrl, max: size });
  const own = new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  pools.set(own, pool);
  return { db: own, end: () => pool.end() };
}

/** How the connection pool of a client made by createDb is used now. */
export function poolUse(db: Db): { total: number; idle: number; waiting: number } | undefined {
  const pool = pools.get(db);
  return pool && { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
}

/** Calls `connected` each time the pool of a client made by createDb opens a connection. */
export function onConnection(db: Db, connected: () => void): void {
  pools.get(db)?.on("connect", connected);
}

const ACCOUNT_WRITES = new Set(["update", "upsert", "delete", "updateMany", "updateManyAndReturn", "deleteMany"]);

/** `db`, telling `written` of each account write through it, in transactions too. */
function announcingAccountWrites(db: PrismaClient, written: (id?: bigint) => void): PrismaClient {
  const extended = db.$extends({
    query: {
      account: {
        async $allOperations({ operation, args, query }) {
          const result = await query(args);
          // A write of many that matched none (a drive file nobody had as avatar) changed nothing.
          if (ACCOUNT_WRITES.has(operation) && (result as { count?: number } | null)?.count !== 0) {
            const where = (args as { where?: { id?: unknown } }).where;
            written(typeof where?.id === "bigint" ? where.id : undefined);
          }
          return result;
        },
      },
    },
  });
  // A query extension leaves the client's shape as it was.
  return extended as unknown as PrismaClient;
}

const LIKE = /\bI?LIKE\b/;

/** What node-postgres is told of a statement besides its values. */
interface Statement {
  /** Undefined: unnamed, planned for its values each time. */
  name?: string;
  text: string;
  types: pg.CustomTypesConfig;
  binary?: boolean;
  /** The same, its rows asked in binary and kept as bytes (queryBytes). */
  bytes?: Statement;
}
const statements = new Map<string, Statement>();

/**
 * A statement's name, the same for the same text. Not for LIKE: whether the trigram index pays
 * depends on the pattern, so those are planned for their values each time.
 */
function statementOf(sql: string): Statement {
  // Looked up first: a text built once and reused (projection/note.ts) keeps its hash, so a
  // statement of 3 KB is named without reading it again.
  let statement = statements.get(sql);
  if (statement === undefined) {
    const name = LIKE.test(sql) ? undefined : `m${createHash("sha1").update(sql).digest("base64url")}`;
    statement = { name, text: sql, types: rowTypes };
    // Texts are few (statements are built from a fixed set of parts), but bound them anyway.
    if (statements.size >= 10_000) statements.clear();
    statements.set(sql, statement);
  }
  return statement;
}

// adapter-pg passes the name on to node-postgres, which leaves a statement without one unnamed.
const nameOf = (sql: string): string => statementOf(sql).name as string;

/**
 * `query` as node-postgres takes it: its values of its own, the rest from the statement's
 * prototype. node-postgres copies every query's config, own properties one by one through their
 * descriptors (cloneQueryConfig): with four of them, that copy was 1.8% of get note's server CPU.
 */
function configOf(query: Prisma.Sql, statement = statementOf(query.text)): pg.QueryConfig {
  const config = Object.create(statement) as pg.QueryConfig;
  config.values = query.values;
  return config;
}

/** Every column kept as the bytes PostgreSQL sent in its binary format: a text column's UTF-8. */
const byteTypes = { getTypeParser: () => (bytes: Buffer) => bytes } as unknown as pg.CustomTypesConfig;

/**
 * queryRows, each column the bytes PostgreSQL sent, in binary format (a text column's are its
 * UTF-8, a bigint's its 8 bytes): for text that is only passed on, as the notes' JSON to an
 * answer. Read as a string and written out again, a search's 100 notes were decoded from UTF-8
 * and encoded again, a sixth of the server's main thread (bench/README.md). Through another
 * client (a transaction's, a test's counting one), its text columns are encoded here.
 */
export async function queryBytes<T extends Record<string, Buffer | null>>(
  db: Db | Prisma.TransactionClient,
  query: Prisma.Sql,
): Promise<T[]> {
  const pool = pools.get(db);
  if (!pool) {
    const rows = await db.$queryRaw<Record<string, unknown>[]>(query);
    return rows.map(
      (row) =>
        Object.fromEntries(
          Object.entries(row).map(([column, value]) => [column, value === null ? null : Buffer.from(String(value))]),
        ) as T,
    );
  }
  const statement = statementOf(query.text);
  statement.bytes ??= { ...statement, binary: true, types: byteTypes };
  const { rows } = await pool.query<T>(configOf(query, statement.bytes));
  return rows;
}

const TRANSACTION_ATTEMPTS = 3;

/**
 * Interactive transactions are run again when PostgreSQL aborts them as a deadlock victim or a
 * serialization failure: nothing of the aborted attempt was kept, and the request it serves
 * should not fail for the order in which concurrent requests happened to take their locks.
 */
function retryingTransactions(db: PrismaClient): PrismaClient {
  const run = db.$transaction.bind(db) as (...args: unknown[]) => Promise<unknown>;
  const retrying = async (...args: unknown[]): Promise<unknown> => {
    if (typeof args[0] !== "function") return run(...args);
    for (let attempt = 1; ; attempt++) {
      try {
        return await run(...args);
      } catch (err) {
        if (attempt >= TRANSACTION_ATTEMPTS || !lockConflict(err)) throw asDomainError(err);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
      }
    }
  };
  db.$transaction = retrying as PrismaClient["$transaction"];
  return db;
}

/** A deadlock (40P01) or serialization failure (40001), however Prisma wraps it. */
function lockConflict(err: unknown): boolean {
  const e = err as { code?: string; message?: unknown; meta?: { driverAdapterError?: { cause?: { code?: string } } } };
  if (e?.code === "P2034") return true;
  const code = e?.meta?.driverAdapterError?.cause?.code;
  if (code === "40P01" || code === "40001") return true;
  return typeof e?.message === "string" && /\b(40P01|40001)\b|deadlock detected/.test(e.message);
}

/**
 * A unique-constraint violation, or undefined for any other error. `columns` names what was
 * violated: the columns where Prisma reports them, else the index name (Prisma 7 with the pg
 * adapter reports only that, e.g. `accounts_email_key_key`).
 */
export function uniqueViolation(err: unknown): { columns: string[] } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | undefined;
  if (e?.code !== "P2002") return undefined;
  const meta = e.meta ?? {};
  const constraint = (meta.driverAdapterError as { cause?: { constraint?: { fields?: string[]; index?: string } } })
    ?.cause?.constraint;
  const target = meta.target;
  const columns = [
    ...(Array.isArray(target) ? target.map(String) : typeof target === "string" ? [target] : []),
    ...(constraint?.fields ?? []),
    ...(constraint?.index ? [constraint.index] : []),
  ];
  return { columns };
}

/**
 * A foreign-key violation, or undefined for any other error: a row the write refers to is gone,
 * deleted by a concurrent request after it was read. `constraint` names the violated key where
 * the driver reports it (e.g. `note_attachments_file_id_fkey`).
 */
export function foreignKeyViolation(err: unknown): { constraint: string } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | undefined;
  const meta = e?.meta ?? {};
  const cause = (
    meta.driverAdapterError as
      | { cause?: { kind?: string; constraint?: { index?: string; fields?: string[] } } }
      | undefined
  )?.cause;
  // P2003 from model queries; from raw ones (P2010), the driver's kind says it.
  if (e?.code !== "P2003" && cause?.kind !== "ForeignKeyConstraintViolation") return undefined;
  const constraint = [meta.field_name, meta.constraint, cause?.constraint?.index, ...(cause?.constraint?.fields ?? [])]
    .filter((v): v is string => typeof v === "string")
    .join(" ");
  return { constraint };
}

/**
 * Whether `err` is a write refused for naming a deleted account (SQLSTATE MU404, raised by the
 * refuse_deleted_accounts trigger: prisma/migrations/20261125060000_deleted_accounts_named):
 * the account was deleted after the request had read it. Answered 404 ACCOUNT_NOT_FOUND;
 * interactive transactions throw that DomainError already.
 */
export function accountGone(err: unknown): boolean {
  const e = err as { meta?: { driverAdapterError?: { cause?: { code?: string } } } } | undefined;
  return e?.meta?.driverAdapterError?.cause?.code === "MU404";
}

/** `err` as the domain says it: ACCOUNT_NOT_FOUND when accountGone. */
export function asDomainError(err: unknown): unknown {
  return accountGone(err) ? new DomainError("ACCOUNT_NOT_FOUND") : err;
}

/**
 * `promise` (an update or delete of one row), with the row gone meanwhile, deleted by a
 * concurrent request (P2025), answered as `code`.
 */
export function orGone<T>(promise: Promise<T>, code: ErrorCode): Promise<T> {
  return promise.catch((err) => {
    throw (err as { code?: string } | undefined)?.code === "P2025" ? new DomainError(code) : err;
  });
}
