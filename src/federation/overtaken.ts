// Activities that came before what they undo: an Undo before its Like, a Delete before its note's
// Create (the first sent again later, or overtaken on the way). What they name is remembered in
// Fedify's key-value table (src/federation/kv-store.ts, which sweeps what expires) for as long as
// Murmur retries a delivery, and what comes late for it then counts for nothing
// (docs/federation.md#activities-out-of-order).
import { type Db, Prisma } from "../db/client.ts";

const REMEMBERED_FOR = "48 hours";

export type Overtaken = "undone-reaction" | "deleted-note";

/** The key-value table's key that remembers `uri` as `kind`. */
function overtakenKey(kind: Overtaken, uri: URL): string {
  // The key as the store encodes one (a JSON array), in a prefix of Murmur's own.
  return JSON.stringify(["murmur", kind, uri.href]);
}

/** `uri` (a Like's id, a note's) was undone or deleted before it came. */
export async function rememberOvertaken(db: Db, kind: Overtaken, uri: URL): Promise<void> {
  await db.$executeRaw`
    INSERT INTO federation_kv (key, value, expires_at)
    VALUES (${overtakenKey(kind, uri)}, 'true'::jsonb, now() + ${REMEMBERED_FOR}::interval)
    ON CONFLICT (key) DO NOTHING`;
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
  return Prisma.sql`COALESCE((SELECT expires_at > now() FROM federation_kv WHERE key = ${overtakenKey(kind, uri)}), false)`;
}

/** Whether `uri` was undone or deleted before it came. */
export async function wasOvertaken(db: Db, kind: Overtaken, uri: URL): Promise<boolean> {
  const [row] = await db.$queryRaw<{ overtaken: boolean }[]>`SELECT ${overtakenSql(kind, uri)} AS overtaken`;
  return row.overtaken;
}
