// Each inbox listener (src/federation/inbox.ts, src/federation/follows.ts) on its own, with
// @fedify/testing's inbox context over a real server's services and database: what an activity does
// here, what it sends back, and that one handled twice has the effect of once. MockFederation's own
// receiveActivity hands listeners a context with no router and no sendActivity (both "Not
// implemented" in 2.3.6), so activities are handed to the listeners as registered, with an inbox
// context given those two. What a listener sends is written to the federation outbox
// (src/federation/outbox.ts), which this server does not relay (FEDERATION_QUEUE=off): its rows
// are read back as the activities they send.
import type { InboxListener, InboxListenerSetters } from "@fedify/fedify";
import { Accept, type Activity, Block, Delete, Follow, Person, Reject, Undo, Update } from "@fedify/fedify/vocab";
import { createFederation, createInboxContext } from "@fedify/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FederationData } from "../src/federation/data.ts";
import { socialActivity } from "../src/federation/follows.ts";
import { listenToInbox } from "../src/federation/inbox.ts";
import type { Account } from "../src/generated/prisma/client.ts";
import { cast } from "./support/cast.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";

const REMOTE = "https://remote.example";
const MALLORY = `${REMOTE}/users/mallory`;

let server: TestServer;
let alice: TestAccount;
let lara: TestAccount;
let mallory: Account;
// biome-ignore lint/suspicious/noExplicitAny: listeners of every activity type, keyed by it
const listeners = new Map<unknown, InboxListener<FederationData, any>>();

beforeAll(async () => {
  server = await startTestServer({ FEDERATION_QUEUE: "off" });
  ({ alice, bob: lara } = await cast(server, { alice: "alice", bob: "lara" }));
  await server.request("PATCH", "/accounts/lara", { token: lara.token, body: { locked: true } });
  const id = server.services.ids.next();
  mallory = await server.services.db.account.create({
    data: {
      id,
      name: "mallory",
      nameKey: "mallory@remote.example",
      email: `remote-${id}@remote.invalid`,
      emailKey: `remote-${id}@remote.invalid`,
      nickname: "Mallory",
      passphraseHash: "",
      host: "remote.example",
      uri: MALLORY,
      inboxUrl: `${MALLORY}/inbox`,
      fetchedAt: new Date(),
    },
  });
  const setters = {
    on(type: unknown, listener: InboxListener<FederationData, Activity>) {
      listeners.set(type, listener);
      return setters;
    },
    // What a Delete that could not be verified does is for a server: test/federation-accounts.test.ts.
    onUnverifiedActivity: () => setters,
  };
  listenToInbox(setters as unknown as InboxListenerSetters<FederationData>);
});

afterAll(() => server?.close());

beforeEach(async () => {
  await server.services.db.federationOutbox.deleteMany();
});

function inboxContext() {
  return createInboxContext<FederationData>({
    url: new URL(PUBLIC_URL),
    data: server.services,
    federation: createFederation<FederationData>({ contextData: server.services, origin: PUBLIC_URL }),
    getActorUri: (identifier) => new URL(`${PUBLIC_URL}/accounts/${identifier}`),
    sendActivity: async () => {
      throw new Error("sent past the federation outbox");
    },
    // Nothing is fetched: what a listener reads is in the activity.
    getDocumentLoader: (async () => (url: string) => {
      throw new Error(`fetched ${url}`);
    }) as never,
  });
}

/** `activity` handed to its listener as Fedify would once its signature checked out. */
async function receive(activity: Activity): Promise<void> {
  const listener = listeners.get(activity.constructor);
  expect(listener, activity.constructor.name).toBeDefined();
  await listener?.(inboxContext(), activity);
}

/** What the listeners sent since the test began: the outbox's rows, as the activities they send. */
async function sent(): Promise<Activity[]> {
  const rows = await server.services.db.federationOutbox.findMany({ orderBy: { id: "asc" } });
  const activities: Activity[] = [];
  for (const row of rows) {
    const sending = await socialActivity(inboxContext(), row);
    if (sending) activities.push(sending.activity);
  }
  return activities;
}

const actor = (account: { id: string | bigint }) => new URL(`${PUBLIC_URL}/accounts/${account.id}`);
let n = 0;
const remoteId = () => new URL(`${REMOTE}/activities/${++n}`);

async function follows(followerId: bigint, followeeId: bigint) {
  return server.services.db.follow.count({ where: { followerId, followeeId } });
}

async function counts(id: string | bigint) {
  return server.services.db.account.findUniqueOrThrow({
    where: { id: BigInt(id) },
    select: { followersCount: true, followingCount: true },
  });
}

describe("Follow", () => {
  it("of an unlocked account is a follow and an Accept naming the Follow, once however often it comes", async () => {
    const follow = new Follow({ id: remoteId(), actor: new URL(MALLORY), object: actor(alice) });
    await receive(follow);
    await receive(follow);
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(1);
    expect(await counts(alice.id)).toMatchObject({ followersCount: 1 });
    const answers = await sent();
    expect(answers.map((a) => a.constructor)).toEqual([Accept, Accept]);
    expect((answers[0] as Accept).objectId?.href).toBe(follow.id?.href);
    expect(answers[0].actorId?.href).toBe(actor(alice).href);
  });

  it("of a locked account is a request holding the Follow's id, and nothing is sent", async () => {
    const follow = new Follow({ id: remoteId(), actor: new URL(MALLORY), object: actor(lara) });
    await receive(follow);
    await receive(follow);
    const requests = await server.services.db.followRequest.findMany({ where: { targetId: BigInt(lara.id) } });
    expect(requests).toMatchObject([{ requesterId: mallory.id, activityUri: follow.id?.href }]);
    expect(await sent()).toEqual([]);
  });
});

describe("Undo(Follow)", () => {
  it("ends the follow and the request, once however often it comes", async () => {
    for (const followee of [alice, lara]) {
      const undo = new Undo({
        id: remoteId(),
        actor: new URL(MALLORY),
        object: new Follow({ id: remoteId(), actor: new URL(MALLORY), object: actor(followee) }),
      });
      await receive(undo);
      await receive(undo);
    }
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(0);
    expect(await counts(alice.id)).toMatchObject({ followersCount: 0 });
    expect(await server.services.db.followRequest.count({ where: { requesterId: mallory.id } })).toBe(0);
  });

  it("of another actor's Follow does nothing", async () => {
    await receive(new Follow({ id: remoteId(), actor: new URL(MALLORY), object: actor(alice) }));
    await receive(
      new Undo({
        id: remoteId(),
        actor: new URL(MALLORY),
        object: new Follow({ id: remoteId(), actor: new URL(`${REMOTE}/users/other`), object: actor(alice) }),
      }),
    );
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(1);
  });
});

describe("Accept and Reject", () => {
  it("Accept of a local account's Follow, named by its id, makes the follow once", async () => {
    const followId = `${actor(alice).href}#activities/1`;
    await server.services.db.followRequest.create({
      data: { requesterId: BigInt(alice.id), targetId: mallory.id, activityUri: followId },
    });
    const accept = new Accept({ id: remoteId(), actor: new URL(MALLORY), object: new URL(followId) });
    await receive(accept);
    await receive(accept);
    expect(await follows(BigInt(alice.id), mallory.id)).toBe(1);
    expect(await counts(alice.id)).toMatchObject({ followingCount: 1 });
    expect(await server.services.db.followRequest.count({ where: { requesterId: BigInt(alice.id) } })).toBe(0);
  });

  it("Reject carrying the Follow ends a follow it had accepted; one of another account's follow does nothing", async () => {
    const reject = (followee: string) =>
      new Reject({
        id: remoteId(),
        actor: new URL(MALLORY),
        object: new Follow({ actor: actor(alice), object: new URL(followee) }),
      });
    await receive(reject(`${REMOTE}/users/other`));
    expect(await follows(BigInt(alice.id), mallory.id)).toBe(1);
    await receive(reject(MALLORY));
    expect(await follows(BigInt(alice.id), mallory.id)).toBe(0);
    expect(await counts(alice.id)).toMatchObject({ followingCount: 0 });
  });
});

describe("Block", () => {
  it("ends the follows both ways and is kept until its Undo", async () => {
    await server.services.db.follow.create({ data: { followerId: BigInt(alice.id), followeeId: mallory.id } });
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(1);
    const block = new Block({ id: remoteId(), actor: new URL(MALLORY), object: actor(alice) });
    await receive(block);
    await receive(block);
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(0);
    expect(await follows(BigInt(alice.id), mallory.id)).toBe(0);
    const blocked = { blockerId: mallory.id, blockedId: BigInt(alice.id) };
    expect(await server.services.db.block.count({ where: blocked })).toBe(1);
    await receive(new Undo({ id: remoteId(), actor: new URL(MALLORY), object: block }));
    expect(await server.services.db.block.count({ where: blocked })).toBe(0);
  });

  it("by a local account refuses the blocked account's Follow with a Reject", async () => {
    await server.services.db.block.create({ data: { blockerId: BigInt(alice.id), blockedId: mallory.id } });
    await receive(new Follow({ id: remoteId(), actor: new URL(MALLORY), object: actor(alice) }));
    expect(await follows(mallory.id, BigInt(alice.id))).toBe(0);
    expect((await sent()).map((a) => a.constructor)).toEqual([Reject]);
  });
});

describe("Update and Delete of an actor", () => {
  it("Update refreshes the stored account; one of another actor than the signer does nothing", async () => {
    const person = (id: string, name: string) =>
      new Person({ id: new URL(id), preferredUsername: "mallory", name, inbox: new URL(`${id}/inbox`) });
    await receive(new Update({ id: remoteId(), actor: new URL(MALLORY), object: person(`${REMOTE}/users/x`, "X") }));
    await receive(new Update({ id: remoteId(), actor: new URL(MALLORY), object: person(MALLORY, "Mal") }));
    const stored = await server.services.db.account.findUniqueOrThrow({ where: { id: mallory.id } });
    expect(stored.nickname).toBe("Mal");
  });

  it("Delete of the actor by itself deletes its account here, once however often it comes", async () => {
    const deletion = new Delete({ id: remoteId(), actor: new URL(MALLORY), object: new URL(MALLORY) });
    await receive(deletion);
    await receive(deletion);
    const stored = await server.services.db.account.findUniqueOrThrow({ where: { id: mallory.id } });
    expect(stored.deletedAt).not.toBeNull();
    expect((await server.request("GET", `/accounts/${mallory.id}`)).body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
  });
});
