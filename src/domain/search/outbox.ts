// Recording what the search index must learn, in the transaction of the change itself. Rows
// are written whenever an index may exist: this instance has MEILI_URL, or search_index_state
// holds a row (an index was built, or is being built, by an instance that has it). So an
// instance without MEILI_URL (a rollout turning Meilisearch on one instance at a time, a CLI
// run) never writes a note that a complete index then lacks. (PostgreSQL search needs no index
// of its own: with neither, nothing is written.)
import { type Prisma, Prisma as sql } from "../../db/client.ts";
import type { SearchOutboxOp } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";

/** Whether changes are recorded for the index, as an SQL condition (read in the change's statement). */
export function searchIndexedSql(services: Pick<Services, "config">): Prisma.Sql {
  return sql.sql`(${services.config.meili !== undefined} OR EXISTS (SELECT FROM search_index_state))`;
}

export async function recordSearchChange(
  services: Pick<Services, "config">,
  tx: Prisma.TransactionClient,
  op: SearchOutboxOp,
  targetIds: bigint[],
): Promise<void> {
  if (targetIds.length === 0) return;
  await tx.$executeRaw`
    INSERT INTO search_outbox (op, target_id)
    SELECT ${op}::"SearchOutboxOp", unnest(${targetIds}::bigint[]) WHERE ${searchIndexedSql(services)}`;
}
