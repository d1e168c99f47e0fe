// Resuming a live stream (docs/live.md#resume: no gap, no duplicate) when notes commit out of id
// order: a note's id is minted before its transaction commits, so a note may commit after one with
// a higher id. Two servers on one database; clients drop and resume on the other one.
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../src/db/client.ts";
import { createAnnouncement } from "../src/domain/announcements/service.ts";
import { JOURNAL_HOURS, pruneJournal } from "../src/domain/live/journal.ts";
import { directAccount, type TestAccount } from "./support/fixtures.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

let servers: TestServer[];
let urls: string[];
let alice: TestAccount;
let bob: TestAccount;
const open: SseClient[] = [];

beforeAll(async () => {
  const url = await freshDatabase();
  const key = randomBytes(32).toString("base64");
  servers = [
    await startTestServer({ WORKER_ID: "1", TOKEN_SIGNING_KEY: key }, url),
    await startTestServer({ WORKER_ID: "2", TOKEN_SIGNING_KEY: key }, url),
  ];
  urls = await Promise.all(
    servers.map(async (s) => {
      await s.app.listen({ host: "127.0.0.1", port: 0 });
      return `http://127.0.0.1:${(s.app.server.address() as AddressInfo).port}`;
    }),
  );
  [alice, bob] = [await directAccount(servers[0], "alice"), await directAccount(servers[0], "bob")];
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await Promise.all(servers.map((s) => s.close()));
});

async function stream(server: number, path: string, lastEventId?: string): Promise<SseClient> {
  const client = await openSse(`${urls[server]}${path}`, lastEventId ? { "last-event-id": lastEventId } : {});
  expect(client.status).toBe(200);
  open.push(client);
  return client;
}

async function post(who: TestAccount, body: Record<string, unknown>, at = 1) {
  const response = await fetch(`${urls[at]}/notes`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${who.token}` },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string };
}

const noteIds = (client: SseClient) => client.events.filter((e) => e.event === "note").map((e) => e.id as string);

async function until(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

describe("a stream resumed after a note that committed late", () => {
  it("sends the note with the lower id that committed while the client was away, and nothing twice", async () => {
    const client = await stream(0, "/streaming/global");
    const warm = await post(bob, { content: "warm-up" });
    await client.event(0);
    // Alice's note waits for her account's row (its counter), its id already minted, while bob's
    // note (a higher id) commits.
    const { db } = servers[0].services;
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = db.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT 1 FROM accounts WHERE id = ${BigInt(alice.id)} FOR UPDATE`;
        locked();
        await new Promise<void>((resolve) => (release = resolve));
      },
      { timeout: 30_000 },
    );
    await isLocked;
    const late = post(alice, { content: "committed last" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Through the other instance: in this one, bob's note may share alice's lane
    // (src/domain/notes/insert.ts) and would wait for hers.
    const early = await post(bob, { content: "committed first" }, 0);
    // What the client saw before it went away: bob's note, or nothing yet.
    await until(() => noteIds(client).includes(early.id), 1_000);
    client.close();
    const lastSeen = noteIds(client).at(-1) as string;
    release();
    await holding;
    const renote = await late;
    expect(BigInt(renote.id) < BigInt(early.id)).toBe(true);

    const resumed = await stream(1, "/streaming/global", lastSeen);
    const seen = [...noteIds(client), ...noteIds(resumed)];
    expect(await until(() => [...noteIds(client), ...noteIds(resumed)].length >= 3)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    seen.splice(0, seen.length, ...noteIds(client), ...noteIds(resumed));
    expect(seen.sort()).toEqual([warm.id, renote.id, early.id].sort());
  });
});

describe("a notifications stream resumed", () => {
  it("sends the notifications and announcements that came while the client was away, in order, once", async () => {
    const dora = await directAccount(servers[0], "dora");
    const [eve, fay] = await Promise.all(["eve", "fay"].map((name) => directAccount(servers[0], name)));
    const first = await stream(0, `/streaming/notifications?access_token=${dora.token}`);
    const follow = (who: TestAccount) =>
      fetch(`${urls[1]}/accounts/dora/follow`, { method: "POST", headers: { authorization: `Bearer ${who.token}` } });
    expect((await follow(eve)).status).toBe(201);
    const seen = await first.event(0);
    first.close();
    expect((await follow(fay)).status).toBe(201);
    const announcement = await createAnnouncement(servers[1].services, {
      type: "info",
      title: "Up",
      description: "again",
    });
    const resumed = await stream(1, `/streaming/notifications?access_token=${dora.token}`, seen.id);
    await resumed.event(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(resumed.events.map((e) => e.event)).toEqual(["notification", "announcement"]);
    expect(resumed.events[1].id).toBe(announcement.id.toString());
    expect(JSON.parse(resumed.events[0].data)).toMatchObject({ type: "followed" });
  });
});

describe("the journal", () => {
  it(`forgets events older than ${JOURNAL_HOURS} hours, and only those`, async () => {
    const { db } = servers[0].services;
    const old = Prisma.sql`now() - make_interval(hours => ${JOURNAL_HOURS + 1})`;
    await db.$executeRaw`UPDATE live_events SET created_at = ${old}`;
    await db.$executeRaw`INSERT INTO live_events (kind, ref_id, created_at) SELECT 'A', g, ${old} FROM generate_series(1, 25000) g`;
    await db.$executeRaw`INSERT INTO live_events (kind, ref_id) VALUES ('A', 25001), ('A', 25002)`;
    await pruneJournal(db);
    const left = await db.$queryRaw<{ id: bigint }[]>`SELECT ref_id AS id FROM live_events ORDER BY seq`;
    expect(left).toEqual([{ id: 25001n }, { id: 25002n }]);
  });
});

describe("clients that drop and resume while several writers post", () => {
  it("lose no note and receive none twice, over thousands of events", async () => {
    const writers = await Promise.all(["w1", "w2", "w3", "w4"].map((name) => directAccount(servers[0], name)));
    const perWriter = 120;
    const clients = 16;
    let writing = true;
    const created: string[] = [];
    let reconnects = 0;
    let subscribed = 0;

    async function churn(first: number): Promise<string[]> {
      const seen: string[] = [];
      let server = first;
      let last: string | undefined;
      let finalRound = false;
      for (let round = 0; ; round++) {
        const client = await stream(server, "/streaming/global", last);
        if (round === 0) subscribed++;
        const budget = 5 + Math.floor(Math.random() * 40);
        await until(
          () =>
            finalRound
              ? seen.length + noteIds(client).length >= created.length
              : noteIds(client).length >= budget || !writing,
          finalRound ? 10_000 : 30_000,
        );
        client.close();
        await client.ended;
        const got = noteIds(client);
        seen.push(...got);
        if (got.length) last = got.at(-1);
        if (finalRound) return seen;
        if (!writing) finalRound = true;
        else reconnects++;
        server = 1 - server;
      }
    }

    const readers = Array.from({ length: clients }, (_, k) => churn(k % 2));
    // Readers first: they are all subscribed before the first note (a fresh stream is sent what
    // commits after it opened; one opened after the writers ended would have nothing to resume).
    expect(await until(() => subscribed === clients, 30_000)).toBe(true);
    await Promise.all(
      writers.flatMap((writer, w) =>
        [0, 1].map(async (half) => {
          for (let i = 0; i < perWriter / 2; i++) {
            const response = await fetch(`${urls[(w + half + i) % 2]}/notes`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${writer.token}` },
              body: JSON.stringify({ content: `churn ${w}.${half}.${i}` }),
            });
            expect(response.status).toBe(201);
            created.push(((await response.json()) as { id: string }).id);
          }
        }),
      ),
    );
    writing = false;
    const seen = await Promise.all(readers);
    const expected = [...created].sort();
    let events = 0;
    for (const ids of seen) {
      events += ids.length;
      expect(ids.length - new Set(ids).size, "notes received twice").toBe(0);
      expect([...ids].sort()).toEqual(expected);
    }
    expect(events).toBeGreaterThanOrEqual(clients * perWriter * writers.length);
    expect(reconnects).toBeGreaterThan(clients);
  }, 120_000);
});
