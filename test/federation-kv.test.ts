// Fedify's key-value store on PostgreSQL (src/federation/kv-store.ts): array keys, TTLs that
// expire, listing by prefix (exactly the keys under it, across pages), compare-and-swap that
// one of several concurrent swaps wins.
import { Temporal } from "@js-temporal/polyfill";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresKvStore } from "../src/federation/kv-store.ts";
import { freshDatabase } from "./support/server.ts";

let databaseUrl: string;
let kv: PostgresKvStore;
let admin: pg.Client;

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  kv = new PostgresKvStore(databaseUrl);
  admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
});

afterAll(async () => {
  await kv?.close();
  await admin?.end();
});

async function keysUnder(prefix?: readonly [string, ...string[]]): Promise<string[][]> {
  const keys: string[][] = [];
  for await (const entry of kv.list(prefix)) keys.push([...entry.key]);
  // Listed in the order of the keys' JSON; compared here in the arrays' order.
  return keys.sort((a, b) => (a.join("\0") < b.join("\0") ? -1 : 1));
}

describe("the federation key-value store", () => {
  it("gets what was set under an array key, nothing once deleted", async () => {
    expect(await kv.get(["doc", "https://example.com/a"])).toBeUndefined();
    await kv.set(["doc", "https://example.com/a"], { id: "a", n: [1, 2] });
    await kv.set(["doc", "https://example.com/b"], "b");
    expect(await kv.get(["doc", "https://example.com/a"])).toEqual({ id: "a", n: [1, 2] });
    expect(await kv.get(["doc", "https://example.com/b"])).toBe("b");
    // A key is the whole array: neither its prefix nor a longer key is it.
    expect(await kv.get(["doc"])).toBeUndefined();
    await kv.set(["doc", "https://example.com/a"], 42);
    expect(await kv.get(["doc", "https://example.com/a"])).toBe(42);
    await kv.delete(["doc", "https://example.com/a"]);
    expect(await kv.get(["doc", "https://example.com/a"])).toBeUndefined();
    expect(await kv.get(["doc", "https://example.com/b"])).toBe("b");
  });

  it("a value set with a TTL is gone once it has passed, and the sweep deletes its row", async () => {
    await kv.set(["ttl", "short"], 1, { ttl: Temporal.Duration.from({ milliseconds: 300 }) });
    await kv.set(["ttl", "long"], 2, { ttl: Temporal.Duration.from({ days: 1 }) });
    await kv.set(["ttl", "none"], 3);
    expect(await kv.get(["ttl", "short"])).toBe(1);
    await expect.poll(() => kv.get(["ttl", "short"]), { timeout: 5_000, interval: 50 }).toBeUndefined();
    expect(await kv.get(["ttl", "long"])).toBe(2);
    expect(await kv.get(["ttl", "none"])).toBe(3);
    expect(await keysUnder(["ttl"])).toEqual([
      ["ttl", "long"],
      ["ttl", "none"],
    ]);
    expect(await kv.deleteExpired()).toBe(1);
    const { rows } = await admin.query("SELECT key FROM federation_kv WHERE key LIKE '[\"ttl\",%' ORDER BY key");
    expect(rows.map((r) => JSON.parse(r.key))).toEqual([
      ["ttl", "long"],
      ["ttl", "none"],
    ]);
    // Set again, an expired key lives again, and setting without a TTL keeps it.
    await kv.set(["ttl", "long"], 4);
    expect(await kv.get(["ttl", "long"])).toBe(4);
  });

  it("expired rows written past the store (the queue's idempotence records, a note's held key) are swept on a timer, a batch at a time", async () => {
    // More than a batch, as the queue's statements and the domain write them: not through set().
    await admin.query(
      `INSERT INTO federation_kv (key, value, expires_at)
       SELECT '["swept",' || g || ']', 'true'::jsonb, now() - interval '1 second' FROM generate_series(1, 1200) g`,
    );
    await admin.query(
      `INSERT INTO federation_kv (key, value, expires_at) VALUES ('["kept"]', 'true', now() + interval '1 day')`,
    );
    const swept = async () =>
      (await admin.query(`SELECT count(*)::int AS n FROM federation_kv WHERE key LIKE '["swept",%'`)).rows[0].n;
    const sweeping = new PostgresKvStore(databaseUrl);
    try {
      sweeping.startSweeping(50);
      await expect.poll(swept, { timeout: 10_000, interval: 50 }).toBe(0);
    } finally {
      await sweeping.close();
    }
    expect(await kv.get(["kept"])).toBe(true);
  });

  it("lists exactly the keys under a prefix", async () => {
    const keys: [string, ...string[]][] = [
      ["p", "a"],
      ["p", "a", "b"],
      ["p", "a", "b", "c"],
      ["p", "ab"],
      ["p", "a,b"],
      ["p", 'a"'],
      ["p", "a-"],
      ["p", "é"],
      ["q", "a"],
    ];
    for (const [i, key] of keys.entries()) await kv.set(key, i);
    expect(await keysUnder(["p", "a"])).toEqual([
      ["p", "a"],
      ["p", "a", "b"],
      ["p", "a", "b", "c"],
    ]);
    expect(await keysUnder(["p", "a", "b"])).toEqual([
      ["p", "a", "b"],
      ["p", "a", "b", "c"],
    ]);
    const underP = await keysUnder(["p"]);
    expect(underP).toHaveLength(8);
    expect(underP.every((k) => k[0] === "p")).toBe(true);
    expect(await keysUnder(["p", "zz"])).toEqual([]);
    const values: unknown[] = [];
    for await (const entry of kv.list(["p", "a", "b", "c"])) values.push(entry.value);
    expect(values).toEqual([2]);
    const all = await keysUnder();
    expect(all).toEqual(
      expect.arrayContaining([
        ["q", "a"],
        ["p", "é"],
        ["doc", "https://example.com/b"],
      ]),
    );
  });

  it("lists a prefix of more entries than one page holds, each once", async () => {
    await admin.query(
      `INSERT INTO federation_kv (key, value)
       SELECT json_build_array('many', lpad(i::text, 5, '0'))::text, to_jsonb(i) FROM generate_series(1, 1234) AS i`,
    );
    const values: unknown[] = [];
    for await (const entry of kv.list(["many"])) values.push(entry.value);
    expect(values).toEqual(Array.from({ length: 1234 }, (_, i) => i + 1));
  });

  it("compare-and-swap: from absent, from a value (JSON-equal), to absent; one of concurrent swaps wins", async () => {
    const key = ["cas", "k"] as const;
    expect(await kv.cas(key, undefined, { v: 1, w: "x" })).toBe(true);
    expect(await kv.cas(key, undefined, { v: 9 })).toBe(false);
    expect(await kv.cas(key, { v: 2, w: "x" }, { v: 9 })).toBe(false);
    expect(await kv.get(key)).toEqual({ v: 1, w: "x" });
    // Key order in an object does not make another value.
    expect(await kv.cas(key, { w: "x", v: 1 }, { v: 2 })).toBe(true);
    expect(await kv.get(key)).toEqual({ v: 2 });

    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => kv.cas(key, { v: 2 }, { v: 3, by: i })));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await kv.get(key)).toEqual({ v: 3, by: results.indexOf(true) });

    expect(await kv.cas(key, { v: 3 }, undefined)).toBe(false);
    expect(await kv.cas(key, { v: 3, by: results.indexOf(true) }, undefined)).toBe(true);
    expect(await kv.get(key)).toBeUndefined();
    expect(await kv.cas(key, undefined, undefined)).toBe(true);

    // An expired entry is absent to compare-and-swap too.
    await kv.set(["cas", "old"], "stale", { ttl: Temporal.Duration.from({ milliseconds: 200 }) });
    expect(await kv.cas(["cas", "old"], undefined, "new")).toBe(false);
    await expect.poll(() => kv.get(["cas", "old"]), { timeout: 5_000, interval: 50 }).toBeUndefined();
    expect(await kv.cas(["cas", "old"], "stale", "new")).toBe(false);
    expect(await kv.cas(["cas", "old"], undefined, "new")).toBe(true);
    expect(await kv.get(["cas", "old"])).toBe("new");
  });
});
