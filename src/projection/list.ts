// The list as every renderer draws it (field.ts), of a lists row with its first assignees.
import { Prisma } from "../db/client.ts";
import { ASSIGNEES_SHOWN, type ListView } from "../domain/lists/service.ts";
import { column, columnOf, many, snowflake, stored, timestamp } from "./field.ts";

export const LIST = {
  id: snowflake("id", "id"),
  title: stored<"title", string>("title", "title"),
  public: stored<"public", boolean>("public", "public"),
  /** The first assignees (ASSIGNEES_SHOWN), by account id newest first. */
  assignees: many(
    (l: Pick<ListView, "assignees">) => l.assignees.map((m) => m.account),
    (t, account) => Prisma.sql`COALESCE((SELECT json_agg(${account("a")} ORDER BY a.id DESC) FROM (
      SELECT a.* FROM list_members m JOIN accounts a ON a.id = m.account_id
      WHERE m.list_id = ${columnOf(t, "id")} ORDER BY m.account_id DESC LIMIT ${Prisma.raw(String(ASSIGNEES_SHOWN))}) a), '[]')`,
  ),
  /** How many accounts the list has. */
  assigneeCount: column(
    (l: Pick<ListView, "_count">) => l._count.assignees,
    (t) => Prisma.sql`(SELECT count(*)::int FROM list_members m WHERE m.list_id = ${columnOf(t, "id")})`,
  ),
  createdAt: timestamp("createdAt", "created_at"),
};
