// Recording what the search index must learn, in the transaction of the change itself
// (only when Meilisearch is configured: PostgreSQL search needs no index of its own).
import type { Prisma } from "../db/client.ts";
import type { Services } from "../domain/context.ts";
import type { SearchOutboxOp } from "../generated/prisma/client.ts";

export async function recordSearchChange(
  services: Pick<Services, "config">,
  tx: Prisma.TransactionClient,
  op: SearchOutboxOp,
  targetIds: bigint[],
): Promise<void> {
  if (!services.config.meili || targetIds.length === 0) return;
  await tx.searchOutbox.createMany({ data: targetIds.map((targetId) => ({ op, targetId })) });
}
