// Writing notifications (docs/notifications.md#who-is-notified): in the transaction of the act that
// causes them, never to oneself, and never of an account the recipient muted
// (docs/accounts.md#mutes). Every notice is written by a statement that asks notifiableSql, the one
// rule, of each row.
import { Prisma } from "../../db/client.ts";
import type { NotificationType } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";
import { unmutedSql } from "../notes/visibility.ts";

export interface NotificationInput {
  recipientId: bigint;
  actorId: bigint;
  type: NotificationType;
  noteId?: bigint;
  content?: string;
  listId?: bigint;
}

/**
 * Whether `recipient` hears of an act of `actor`, in SQL: not its own act
 * (docs/notifications.md#who-is-notified), nor one of an account it muted (a probe of the mutes'
 * primary key, as the feeds make).
 */
export function notifiableSql(recipient: Prisma.Sql, actor: bigint | Prisma.Sql): Prisma.Sql {
  return Prisma.sql`${recipient} <> ${actor} ${unmutedSql({ id: recipient }, actor)}`;
}

export async function notify(
  services: Services,
  tx: Prisma.TransactionClient,
  input: NotificationInput,
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content, list_id)
    SELECT ${services.ids.next()}, ${input.recipientId}, ${input.type}::"NotificationType", ${input.actorId},
      ${input.noteId ?? null}::bigint, ${input.content ?? null}::text, ${input.listId ?? null}::bigint
    WHERE ${notifiableSql(Prisma.sql`${input.recipientId}::bigint`, input.actorId)}`;
}
