// The notification as every renderer draws it (field.ts), of a notifications row with its actor
// (an account, or none: the system).
import { Prisma } from "../db/client.ts";
import type { PublicAccount } from "../domain/accounts/service.ts";
import type { Notification } from "../generated/prisma/client.ts";
import { column, columnOf, one, optionalSnowflake, snowflake, stored, timestamp } from "./field.ts";

export const NOTIFICATION = {
  id: snowflake("id", "id"),
  type: column(
    (n: Pick<Notification, "type">) => n.type,
    (t) => columnOf(t, "type::text"),
  ),
  /** The account that caused it; null when the system did (docs/notifications.md#shape). */
  actor: one(
    (n: { actor: PublicAccount | null }) => n.actor,
    (t, account) => Prisma.sql`(SELECT ${account("a")} FROM accounts a WHERE a.id = ${columnOf(t, "actor_id")})`,
  ),
  noteId: optionalSnowflake("noteId", "note_id"),
  content: stored<"content", string | null>("content", "content"),
  listId: optionalSnowflake("listId", "list_id"),
  /** For `reported`: the report. */
  reportId: optionalSnowflake("reportId", "report_id"),
  read: column(
    (n: Pick<Notification, "readAt">) => n.readAt !== null,
    (t) => Prisma.sql`${columnOf(t, "read_at")} IS NOT NULL`,
  ),
  createdAt: timestamp("createdAt", "created_at"),
};
