// What taking inbox activities in costs less with (bench/README.md, "Federation at scale"): the
// remote keys Fedify keeps, remembered by the key-value store in memory
// (src/federation/kv-store.ts) and parsed once (src/federation/parsed-keys.ts), with what a fleet
// and expiry need of them still true. A rotated key verified by a server that remembers the old one
// is test/federation-rules.test.ts's.
import { CryptographicKey } from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresKvStore } from "../src/federation/kv-store.ts";
import { parseKeysOnce } from "../src/federation/parsed-keys.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { freshDatabase } from "./support/server.ts";

let databaseUrl: string;
/** Two instances of a fleet: each its own store over one table. */
let here: PostgresKvStore;
let there: PostgresKvStore;

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  here = new PostgresKvStore(databaseUrl);
  there = new PostgresKvStore(databaseUrl);
});

afterAll(async () => {
  await here?.close();
  await there?.close();
});

const keyOf = (url: string) => ["_fedify", "publicKey", url] as const;

async function keyJson(id: string): Promise<unknown> {
  const { publicKey } = await rsaKeyPair();
  return new CryptographicKey({ id: new URL(id), owner: new URL(id.split("#")[0]), publicKey }).toJsonLd();
}

describe("remote keys in the key-value store", () => {
  it("are read from the table once, then the same object from memory; what this store writes or deletes is seen at once", async () => {
    const key = keyOf("https://a.example/users/ann#main-key");
    const first = await keyJson("https://a.example/users/ann#main-key");
    await there.set(key, first);
    const read = await here.get(key);
    expect(read).toEqual(first);
    // The same object again: its parse is kept by it.
    expect(await here.get(key)).toBe(read);

    // Another instance stores a newer key: this one goes on with the one it read until its own
    // check fails with it and Fedify fetches and stores the key again, through this store.
    const second = await keyJson("https://a.example/users/ann#main-key");
    await there.set(key, second);
    expect(await here.get(key)).toBe(read);
    await here.set(key, second);
    expect(await here.get(key)).toEqual(second);
    expect(await here.get(key)).not.toBe(read);

    await here.delete(key);
    expect(await here.get(key)).toBeUndefined();
  });

  it("an entry that expires (a key unavailable for a while) is absent once it has, in memory too", async () => {
    const key = keyOf("https://b.example/users/bob#main-key");
    await here.set(key, null, { ttl: Temporal.Duration.from({ milliseconds: 300 }) });
    expect(await here.get(key)).toBeNull();
    await expect.poll(() => here.get(key), { timeout: 5_000, interval: 50 }).toBeUndefined();

    // Read from the table, its expiry is kept with it.
    await there.set(key, null, { ttl: Temporal.Duration.from({ milliseconds: 300 }) });
    expect(await here.get(key)).toBeNull();
    await expect.poll(() => here.get(key), { timeout: 5_000, interval: 50 }).toBeUndefined();
  });

  it("other entries are read from the table every time", async () => {
    const key = ["_fedify", "remoteDocument", "https://c.example/notes/1"] as const;
    await there.set(key, { n: 1 });
    expect(await here.get(key)).toEqual({ n: 1 });
    await there.set(key, { n: 2 });
    expect(await here.get(key)).toEqual({ n: 2 });
  });
});

describe("remote keys parsed once", () => {
  it("a key's JSON parsed again is its first parse; another object is parsed anew", async () => {
    parseKeysOnce();
    const json = await keyJson("https://d.example/users/dan#main-key");
    const parsed = await CryptographicKey.fromJsonLd(json);
    expect(await CryptographicKey.fromJsonLd(json)).toBe(parsed);
    expect(parsed.publicKey).toBeInstanceOf(CryptoKey);

    const copy = structuredClone(json);
    const again = await CryptographicKey.fromJsonLd(copy);
    expect(again).not.toBe(parsed);
    expect(again.id?.href).toBe(parsed.id?.href);
  });
});
