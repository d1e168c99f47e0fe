// The federation outbox (src/federation/outbox.ts; docs/federation.md#delivery: never lost across
// restarts or instance deaths). A follow committed by a process that stops before anything of it
// reaches the queue is delivered by another process on the same database; with two relays on one
// database, each row is queued once, and one sender's rows in the order they were written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { socialActivity } from "../src/federation/follows.ts";
import { openFederation } from "../src/federation/mount.ts";
import { OutboxRelay } from "../src/federation/outbox.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, freePort, listening } from "./support/federation.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";

const WAIT = { timeout: 15_000, interval: 50 };

const servers: TestServer[] = [];

/** A server listening at `host`:`port`, on `url`'s database (a fresh one by default), closed at the end. */
async function tracked(host: string, port: number, env: Record<string, string> = {}, url?: string) {
  const server = await listening(host, { port, env, databaseUrl: url });
  servers.push(server);
  return server;
}

async function close(server: TestServer) {
  servers.splice(servers.indexOf(server), 1);
  await closeFederating(server);
}

afterAll(async () => {
  for (const server of [...servers]) await close(server);
});

describe("an act committed by a process that stops before relaying it", () => {
  let b: TestServer;

  beforeAll(async () => {
    b = await tracked("127.0.0.2", await freePort("127.0.0.2"));
  }, 30_000);

  it("is delivered by another process on the same database", async () => {
    const url = await freshDatabase();
    const port = await freePort("127.0.0.3");
    // A1 works no queue, so relays nothing; and nothing of A's database reaches the queue while it
    // runs (every enqueue fails, as if the process had died right after the commit).
    const a1 = await tracked("127.0.0.3", port, { FEDERATION_QUEUE: "off" }, url);
    await a1.services.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'the process is gone'; END $$`);
    await a1.services.db.$executeRawUnsafe(`
      CREATE TRIGGER refuse_enqueue BEFORE INSERT ON federation_messages
        FOR EACH ROW EXECUTE FUNCTION refuse_enqueue()`);
    const [{ alice }, { bob }] = await Promise.all([cast(a1, { alice: "alice" }), cast(b, { bob: "bob" })]);
    const bHost = b.services.config.localHost;
    const aHost = a1.services.config.localHost;

    const follow = await a1.request("POST", `/accounts/@bob@${bHost}/follow`, { token: alice.token, body: {} });
    // Committed: the request holds the Follow's id.
    expect(await a1.services.db.followRequest.count({ where: { activityUri: { not: null } } })).toBe(1);
    await close(a1);

    // Another process on the same database (and address) relays it: B gets the Follow and
    // answers with an Accept, which A2 takes.
    const a2 = await tracked("127.0.0.3", port, {}, url);
    await a2.services.db.$executeRawUnsafe("DROP TRIGGER refuse_enqueue ON federation_messages");
    const followers = async () =>
      ((await b.request("GET", "/accounts/bob/followers", { token: bob.token })).body as { name: string }[]).map(
        (account) => account.name,
      );
    await expect.poll(followers, WAIT).toEqual([`@alice@${aHost}`]);
    await expect.poll(() => a2.services.db.follow.count({ where: { followerId: BigInt(alice.id) } }), WAIT).toBe(1);
    expect(await a2.services.db.federationOutbox.count()).toBe(0);
    // And A1 had answered as for any remote follow: what failed was no concern of the request.
    expect(follow.status).toBe(201);
    expect(follow.body).toEqual({ pending: true });
  });
});

describe("two relays on one database", () => {
  it("queue each row once, one sender's rows in the order written", async () => {
    const c = await startTestServer({ FEDERATION_QUEUE: "off" });
    servers.push(c);
    const { db, federation: federator } = c.services;
    const senders = Object.values(await cast(c, { alice: "alice", bob: "bob", stranger: "sam" })).map((a) =>
      BigInt(a.id),
    );
    const remotes = [];
    for (let n = 0; n < 4; n++) {
      const id = c.services.ids.next();
      const uri = `https://remote${n}.example/users/r`;
      remotes.push(
        await db.account.create({
          data: {
            id,
            name: "r",
            nameKey: `r@remote${n}.example`,
            email: `remote-${id}@remote.invalid`,
            emailKey: `remote-${id}@remote.invalid`,
            nickname: "R",
            passphraseHash: "",
            host: `remote${n}.example`,
            uri,
            inboxUrl: `${uri}/inbox`,
            fetchedAt: new Date(),
          },
        }),
      );
    }
    // 60 acts, each in a transaction of its own, as the domain writes them.
    for (let n = 0; n < 60; n++) {
      const blockerId = senders[n % senders.length];
      const blockedId = remotes[n % remotes.length].id;
      await db.$transaction(
        (tx) => federator?.send(tx, { type: n % 2 ? "unblock" : "block", blockerId, blockedId }) ?? Promise.resolve(),
      );
    }
    const written = await db.federationOutbox.findMany({ orderBy: { id: "asc" } });
    expect(written).toHaveLength(60);

    // Only relays: this queue is worked by nobody, so what they queued stays to be counted.
    const { federation, close: closeFederation } = openFederation(c.services, false);
    const relays = [0, 1].map(() => new OutboxRelay(federation, c.services, socialActivity));
    for (const relay of relays) relay.start();
    try {
      await expect.poll(() => db.federationOutbox.count(), WAIT).toBe(0);
    } finally {
      for (const relay of relays) await relay.stop();
      await closeFederation();
    }

    const queued = await db.$queryRaw<{ activity: string }[]>`
      SELECT message->>'activityId' AS activity FROM federation_messages ORDER BY id`;
    const order = queued.map((m) => m.activity);
    expect([...order].sort()).toEqual(written.map((row) => row.activityId).sort());
    for (const sender of senders) {
      const mine = written.filter((row) => row.sender === sender).map((row) => row.activityId);
      expect(order.filter((activity) => mine.includes(activity))).toEqual(mine);
    }
  });
});
