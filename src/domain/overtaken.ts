// Activities that came before what they undo: an Undo before its Like, a Delete before its note's
// Create (the first sent again later, or overtaken on the way). What they name is remembered in
// Fedify's key-value table (src/federation/kv-store.ts, which sweeps what expires) for as long as
// Murmur retries a delivery, and what comes late for it then counts for nothing
// (docs/federation.md#activities-out-of-order).
//
// A remote note's (or reaction's) storing and its deletion meet on one key of that table: the
// statement that stores it first writes the key (held) and stores nothing if it finds it
// remembered as deleted (or undone); a deletion writes the key before it looks for what it names.
// A key being written waits for the statement that wrote it first to end, as any unique key does,
// so whichever of the two comes second sees what the first did, even when both are handled at the
// same moment.
import { type Db, Prisma } from "../db/client.ts";

const REMEMBERED_FOR = "48 hours";
/** How long what is stored holds its key: past the end of any statement that stores it. */
const STORING_HELD_FOR = "1 hour";

export type Overtaken = "undone-reaction" | "deleted-note";

/** The key-value table's key that remembers `uri` as `kind`. */
function overtakenKey(kind: Overtaken, uri: string): string {
  // The key as the store encodes one (a JSON array), in a prefix of Murmur's own.
  return JSON.stringify(["murmur", kind, uri]);
}

/**
 * `uri` (a Like's id, a note's) was undone or deleted, perhaps before it came. A key being written
 * by a storing (storingHeldSql) is waited for: what it stores is there when this returns.
 */
export async function rememberOvertaken(db: Db, kind: Overtaken, uri: URL): Promise<void> {
  await db.$executeRaw`
    INSERT INTO federation_kv (key, value, expires_at)
    VALUES (${overtakenKey(kind, uri.href)}, 'true'::jsonb, now() + ${REMEMBERED_FOR}::interval)
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`;
}

/**
 * Whether `uri` was undone or deleted before it came, as an SQL condition (a statement may ask it
 * among others). The expiry is read from the row the key finds, not asked of the scan: the table's
 * statistics say that hardly a row outlives now() (its rows expire a day after they come, and the
 * newest are past what the last ANALYZE saw), and with `expires_at > now()` in its condition
 * PostgreSQL probed the expiry's index and read every live record (bench/README.md, "Intake after
 * a fan-out, 2026-11-27"; test/federation-overtaken-planned.test.ts).
 */
export function overtakenSql(kind: Overtaken, uri: URL): Prisma.Sql {
  return Prisma.sql`COALESCE((
    SELECT expires_at > now() AND value = 'true'::jsonb FROM federation_kv WHERE key = ${overtakenKey(kind, uri.href)}
  ), false)`;
}

/** Whether `uri` was undone or deleted before it came. */
export async function wasOvertaken(db: Db, kind: Overtaken, uri: URL): Promise<boolean> {
  const [row] = await db.$queryRaw<{ overtaken: boolean }[]>`SELECT ${overtakenSql(kind, uri)} AS overtaken`;
  return row.overtaken;
}

/**
 * A data-modifying statement that holds the key of `uri` (a remote note's id, a Like's) for its
 * storing, and returns a row when what it names may be stored: not when it is remembered as
 * deleted or undone, nor when it is held already (stored within the hour, or being stored: then it
 * waits for that statement to end).
 */
export function storingHeldSql(kind: Overtaken, uri: string): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO federation_kv AS held (key, value, expires_at)
    VALUES (${overtakenKey(kind, uri)}, 'false'::jsonb, now() + ${STORING_HELD_FOR}::interval)
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
      WHERE held.expires_at <= now()
    RETURNING key`;
}
