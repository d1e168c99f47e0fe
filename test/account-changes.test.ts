// accounts_changed (migrations 20261122180000 and 20261127140000) announces a change to an account
// row so every instance forgets its cached copy (src/domain/sessions/caller-cache.ts). It fires
// only for an UPDATE that sets one of the columns it lists: every column but the counters others'
// acts move and updated_at, so a note posted (notes_count + 1) pays nothing for it. A column added
// to accounts without being added to that list would never be announced: this test says which.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { account } from "./support/fixtures.ts";
import { serverAndOperator } from "./support/server.ts";

const opened = serverAndOperator();

const NOT_ANNOUNCED = ["followers_count", "notes_count", "updated_at"];

describe("accounts_changed", () => {
  it("lists every column of accounts but the counters others move and updated_at", async () => {
    const { rows } = await opened.operator.query<{ listed: string[] | null; columns: string[] }>(`
      SELECT (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
          WHERE a.attrelid = t.tgrelid AND a.attnum = ANY(t.tgattr::int2[])) AS listed,
        (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
          WHERE a.attrelid = t.tgrelid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
      FROM pg_trigger t WHERE t.tgname = 'accounts_changed' AND t.tgrelid = 'accounts'::regclass`);
    expect(rows).toHaveLength(1);
    expect(rows[0].listed).toEqual(rows[0].columns.filter((c) => !NOT_ANNOUNCED.includes(c)));
  });

  it("announces a change of a listed column, not a counter's", async () => {
    const someone = await account(opened.server, "ac_someone");
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: opened.server.databaseUrl });
    await listener.connect();
    try {
      listener.on("notification", (n) => heard.push(n.payload ?? ""));
      await listener.query("LISTEN murmur_account_changes");
      await opened.operator.query(
        "UPDATE accounts SET notes_count = notes_count + 1, followers_count = 3 WHERE id = $1",
        [someone.id],
      );
      await opened.operator.query("UPDATE accounts SET bio = bio WHERE id = $1", [someone.id]);
      await opened.operator.query("UPDATE accounts SET bio = 'changed' WHERE id = $1", [someone.id]);
      // A NOTIFY is delivered after its commit; a round trip on the listener's connection lets it arrive.
      await listener.query("SELECT 1");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).toEqual([someone.id]);
    } finally {
      await listener.end();
    }
  });
});
