// What taking inbox activities in costs less with (bench/README.md, "Federation at scale"): the
// remote keys Fedify keeps, remembered by the key-value store in memory
// (src/federation/kv-store.ts) and parsed once (src/federation/parsed-keys.ts), with what a fleet
// and expiry need of them still true (a rotated key verified by a server that remembers the old one
// is test/federation-rules.test.ts's); what a Create needs to know read in one statement, equal to
// the reads it stands for (src/federation/remote-notes.ts); a handled message announced only when
// it lets another go (src/federation/message-queue.ts).
import { CryptographicKey } from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db } from "../src/db/client.ts";
import { rememberOvertaken, wasOvertaken } from "../src/domain/overtaken.ts";
import { PostgresKvStore } from "../src/federation/kv-store.ts";
import { PostgresMessageQueue } from "../src/federation/message-queue.ts";
import { parseKeysOnce } from "../src/federation/parsed-keys.ts";
import { createKnown } from "../src/federation/remote-notes.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { freshDatabase } from "./support/server.ts";

let databaseUrl: string;
/** Two instances of a fleet: each its own store over one table. */
let here: PostgresKvStore;
let there: PostgresKvStore;
let db: Db;

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  here = new PostgresKvStore(databaseUrl);
  there = new PostgresKvStore(databaseUrl);
  db = createDb(databaseUrl, () => {}, 2);
});

afterAll(async () => {
  await here?.close();
  await there?.close();
  await db?.$disconnect();
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

describe("what a Create needs to know, in one statement", () => {
  let nextId = 1000n;
  async function stored(name: string, host: string | null, extra: { fetchedAt?: Date } = {}) {
    const id = nextId++;
    const uri = host ? `https://${host}/users/${name}` : null;
    await db.account.create({
      data: {
        id,
        name,
        nameKey: host ? `${name}@${host}` : name,
        email: `${id}@x.invalid`,
        emailKey: `${id}@x.invalid`,
        nickname: name,
        passphraseHash: "",
        host,
        uri,
        inboxUrl: uri && `${uri}/inbox`,
        followersUrl: uri && `${uri}/followers`,
        fetchedAt: extra.fetchedAt ?? (host ? new Date() : null),
      },
    });
    return { id, uri: new URL(uri ?? `https://local.invalid/accounts/${id}`) };
  }

  /** The reads it stands for, each as the listener made it before. */
  async function apart(author: URL, note: URL) {
    const account = await db.account.findUnique({ where: { uri: author.href } });
    const followed = account
      ? (await db.follow.findFirst({ where: { followeeId: account.id, follower: { host: null } } })) !== null
      : false;
    const row = await db.note.findUnique({ where: { uri: note.href }, select: { id: true } });
    return {
      author: account && {
        id: account.id,
        followersUrl: account.followersUrl,
        fetchedAt: account.fetchedAt,
        deletedAt: account.deletedAt,
      },
      followed,
      stored: row?.id ?? null,
      deleted: await wasOvertaken(db, "deleted-note", note),
    };
  }

  it("gives what the separate reads give: author stored or not, deleted, followed here or only from elsewhere, note stored, its Delete first", async () => {
    const local = await stored("carol", null);
    const followedAuthor = await stored("ann", "e.example");
    const remoteOnly = await stored("bob", "e.example");
    const fan = await stored("fan", "f.example");
    const gone = await stored("gus", "e.example");
    const old = await stored("olga", "e.example", { fetchedAt: new Date(Date.now() - 3 * 86_400_000) });
    await db.follow.createMany({
      data: [
        { followerId: local.id, followeeId: followedAuthor.id },
        { followerId: fan.id, followeeId: remoteOnly.id },
        { followerId: local.id, followeeId: gone.id },
        { followerId: local.id, followeeId: old.id },
      ],
    });
    // Deleted since it was followed.
    await db.$executeRaw`UPDATE accounts SET deleted_at = now() WHERE id = ${gone.id}`;
    const noteOf = (author: { uri: URL }, n: number) => new URL(`${author.uri.href}/notes/${n}`);
    await db.note.create({
      data: { id: nextId++, authorId: followedAuthor.id, content: "", uri: noteOf(followedAuthor, 1).href },
    });
    await rememberOvertaken(db, "deleted-note", noteOf(remoteOnly, 2));
    // Remembered once, since expired: no longer counts.
    await rememberOvertaken(db, "deleted-note", noteOf(remoteOnly, 3));
    await db.$executeRaw`UPDATE federation_kv SET expires_at = now() - interval '1 second'
      WHERE key = ${JSON.stringify(["murmur", "deleted-note", noteOf(remoteOnly, 3).href])}`;

    const cases: [URL, URL][] = [
      [followedAuthor.uri, noteOf(followedAuthor, 1)],
      [followedAuthor.uri, noteOf(followedAuthor, 9)],
      [remoteOnly.uri, noteOf(remoteOnly, 2)],
      [remoteOnly.uri, noteOf(remoteOnly, 3)],
      [gone.uri, noteOf(gone, 1)],
      [old.uri, noteOf(old, 1)],
      [new URL("https://e.example/users/nobody"), new URL("https://e.example/users/nobody/notes/1")],
      // A local account is no remote author.
      [local.uri, noteOf(local, 1)],
    ];
    const seen = new Set<string>();
    for (const [author, note] of cases) {
      const together = await createKnown(db, author, note);
      const separate = await apart(author, note);
      if (author === local.uri) expect(together.author).toBeNull();
      else expect(together, `${author.href} ${note.href}`).toEqual(separate);
      seen.add(
        JSON.stringify([together.author !== null, together.followed, together.stored !== null, together.deleted]),
      );
    }
    // Each of the answers is given by some case.
    expect(seen.size).toBeGreaterThanOrEqual(5);
  });
});

describe("the queue's announcements", () => {
  it("a handled message is announced only when it lets the next of its key go: a received activity's is not", async () => {
    const name = "announced";
    const q = new PostgresMessageQueue({ databaseUrl, log: pino({ level: "silent" }), name });
    const heard = new pg.Client({ connectionString: databaseUrl });
    await heard.connect();
    const payloads: string[] = [];
    heard.on("notification", (n) => {
      if (n.payload?.endsWith(`:${name}`)) payloads.push(n.payload);
    });
    await heard.query("LISTEN murmur_federation_queued");
    const handled: unknown[] = [];
    const stop = new AbortController();
    const listening = q.listen((message) => void handled.push(message), { signal: stop.signal });
    try {
      // A received activity: keyed by its id, nothing behind it.
      await q.enqueue("alone", { orderingKey: "received https://e.example/activities/1" });
      await expect.poll(() => handled.length, { timeout: 10_000, interval: 20 }).toBe(1);
      // Notifications come in the order of their commits: once this one is heard, any of the
      // handled message's would have been.
      await q.enqueue("marker");
      await expect.poll(() => handled.length, { timeout: 10_000, interval: 20 }).toBe(2);
      await expect.poll(() => payloads.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
      expect(payloads).toHaveLength(2);

      // Two of one key, the second parked behind the first: the first's end lets it go, and says
      // so; the second's lets nothing go.
      stop.abort();
      await listening;
      await q.enqueueMany(["first", "second"], { orderingKey: "one key" });
      await expect.poll(() => payloads.length, { timeout: 10_000, interval: 20 }).toBe(3);
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const order: unknown[] = [];
      const stop2 = new AbortController();
      const listening2 = q.listen(
        async (message) => {
          order.push(message);
          if (message === "first") await gate;
        },
        { signal: stop2.signal },
      );
      await expect.poll(() => order.length, { timeout: 10_000, interval: 20 }).toBe(1);
      open();
      await expect.poll(() => order, { timeout: 10_000, interval: 20 }).toEqual(["first", "second"]);
      await q.enqueue("marker 2");
      await expect.poll(() => order.length, { timeout: 10_000, interval: 20 }).toBe(3);
      await expect.poll(() => payloads.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(5);
      // The enqueues (3), and the first's end.
      expect(payloads).toHaveLength(5);
      stop2.abort();
      await listening2;
    } finally {
      stop.abort();
      await listening;
      await q.close();
      await heard.end();
    }
  });
});
