// Writing notifications (spec 6, CONTRACT 5): in the transaction of the act that causes them,
// and never to oneself.
import { Prisma } from "../../db/client.ts";
import type { NotificationType } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";

export interface NotificationInput {
  recipientId: bigint;
  actorId: bigint;
  type: NotificationType;
  noteId?: bigint;
  content?: string;
  listId?: bigint;
}

/** The notices that may be sent: nobody is notified of their own act (CONTRACT 5). */
export function toOthers<N extends Pick<NotificationInput, "recipientId" | "actorId">>(notices: N[]): N[] {
  return notices.filter((n) => n.recipientId !== n.actorId);
}

/** The same rule in SQL, for notices written by a statement: `recipient` is not the actor. */
export function toOthersSql(recipient: Prisma.Sql, actorId: bigint): Prisma.Sql {
  return Prisma.sql`${recipient} <> ${actorId}`;
}

export async function notify(
  services: Services,
  tx: Prisma.TransactionClient,
  input: NotificationInput,
): Promise<void> {
  for (const notice of toOthers([input])) {
    await tx.notification.create({ data: { id: services.ids.next(), ...notice } });
  }
}
