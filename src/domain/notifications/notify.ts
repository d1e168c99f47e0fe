// Writing notifications (spec 6, CONTRACT 5): in the transaction of the act that causes them,
// and never to oneself.
import type { Prisma } from "../../db/client.ts";
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

export async function notify(
  services: Services,
  tx: Prisma.TransactionClient,
  input: NotificationInput,
): Promise<void> {
  if (input.recipientId === input.actorId) return;
  await tx.notification.create({ data: { id: services.ids.next(), ...input } });
}
