// The reaction as every renderer draws it (field.ts), of a reactions row.
import { snowflake, stored, timestamp } from "./field.ts";

export const REACTION = {
  id: snowflake("id", "id"),
  /** One Unicode emoji, or `<:alias:id>` of a custom emoji. */
  emoji: stored<"emoji", string>("emoji", "emoji"),
  reactedBy: snowflake("accountId", "account_id"),
  createdAt: timestamp("createdAt", "created_at"),
};
