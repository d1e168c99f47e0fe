// Local notes delivered to other servers (docs/federation.md#notes): a Murmur server on 127.0.0.2
// whose accounts have followers on a peer played by a small HTTP server (test/support/peer.ts) on 127.0.0.3
// (its accounts stored on the Murmur server as a resolved remote account is). The peer's inboxes
// record each POST, checking its signature with Fedify's verifyRequest. A note is sent as
// Create(Note) to those who may see it, addressed by its visibility, each server's shared inbox
// once; its deletion as Delete(Tombstone); a note nobody remote may see is not sent. The Note
// answers at its id for ActivityPub, while REST clients get the REST note there as before.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { Peer } from "./support/peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };
const PUBLIC = "https://www.w3.org/ns/activitystreams#Public";
const AP = "application/activity+json";

let a: ListeningServer;
let peer: Peer;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;

/** A remote account of the peer stored on A, as a resolved one is. */
function remote(name: string) {
  return peer.stored(a, name);
}

async function post(who: TestAccount, body: Record<string, unknown>): Promise<{ id: string; uri: string }> {
  const answer = await a.request("POST", "/notes", { token: who.token, body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  const id = (answer.body as { id: string }).id;
  return { id, uri: `${a.url}/notes/${id}` };
}

beforeAll(async () => {
  peer = new Peer("127.0.0.3");
  await peer.start();
  a = await listening("127.0.0.2");
  ({ alice, bob, carol } = await cast(a, { alice: "alice", bob: "bob", carol: "carol" }));
  const [r1, r2] = [await remote("r1"), await remote("r2")];
  await remote("r3");
  // Two followers of alice on the peer, and a local one; bob's only follower is local.
  await a.services.db.follow.createMany({
    data: [
      { followerId: r1.id, followeeId: BigInt(alice.id) },
      { followerId: r2.id, followeeId: BigInt(alice.id) },
      { followerId: BigInt(carol.id), followeeId: BigInt(alice.id) },
      { followerId: BigInt(carol.id), followeeId: BigInt(bob.id) },
    ],
  });
}, 30_000);

afterAll(async () => {
  await closeFederating(a);
  await peer?.stop();
});

describe("local notes delivered", () => {
  it("public: Create(Note) to as:Public cc followers, once to the server's shared inbox, signed", async () => {
    const parent = await post(alice, { content: "first" });
    const note = await a.request("POST", `/notes/${parent.id}/reply`, {
      token: alice.token,
      body: { content: "Hello <b>&\nworld\n\nagain", cw_comment: "careful" },
    });
    expect(note.status).toBe(200);
    const uri = `${a.url}/notes/${(note.body as { id: string }).id}`;
    await expect.poll(() => peer.about(uri).length, WAIT).toBe(1);
    const [{ path, verified, activity }] = peer.about(uri);
    expect(path).toBe("/inbox");
    expect(verified).toBe(true);
    const actor = `${a.url}/accounts/${alice.id}`;
    expect(activity).toMatchObject({
      type: "Create",
      actor,
      to: PUBLIC,
      cc: `${actor}/followers`,
      object: {
        type: "Note",
        id: uri,
        attributedTo: actor,
        content: "<p>Hello &lt;b&gt;&amp;<br>world</p><p>again</p>",
        summary: "careful",
        sensitive: true,
        inReplyTo: parent.uri,
      },
    });
    expect(activity.object.published).toEqual(expect.any(String));
  });

  it("followers-only: to followers alone; home: to followers cc as:Public", async () => {
    const followers = await post(alice, { content: "friends", visibility: "followers" });
    const home = await post(alice, { content: "home", visibility: "home" });
    await expect.poll(() => peer.about(followers.uri).length + peer.about(home.uri).length, WAIT).toBe(2);
    const followersOnly = peer.about(followers.uri)[0].activity;
    expect(followersOnly.to).toBe(`${a.url}/accounts/${alice.id}/followers`);
    expect(followersOnly.cc).toBeUndefined();
    expect(JSON.stringify(followersOnly)).not.toContain("Public");
    expect(peer.about(home.uri)[0].activity).toMatchObject({
      to: `${a.url}/accounts/${alice.id}/followers`,
      cc: PUBLIC,
    });
  });

  it("direct: only to its remote recipient, with a Mention; nothing for a note nobody remote may see", async () => {
    const silent = await post(bob, { content: "nobody remote follows bob" });
    const toLocal = await post(alice, { content: "to carol", visibility: "direct", send_to: "carol" });
    const direct = await post(alice, { content: "psst", visibility: "direct", send_to: `@r3@${peer.host}` });
    await expect.poll(() => peer.about(direct.uri).length, WAIT).toBe(1);
    const [{ path, activity }] = peer.about(direct.uri);
    expect(path).toBe("/inbox");
    expect(activity.to).toBe(`${peer.url}/users/r3`);
    expect(activity.cc).toBeUndefined();
    expect(activity.object.tag).toMatchObject({
      type: "Mention",
      href: `${peer.url}/users/r3`,
      name: `@r3@${peer.host}`,
    });
    // Written before the direct note's: relayed (and queued) before it, had they been written at all.
    expect(peer.about(silent.uri)).toEqual([]);
    expect(peer.about(toLocal.uri)).toEqual([]);
    expect(await a.services.db.federationOutbox.count()).toBe(0);
  });

  it("deleted: Delete(Tombstone) to the same audience", async () => {
    const note = await post(alice, { content: "soon gone" });
    await expect.poll(() => peer.about(note.uri).length, WAIT).toBe(1);
    expect((await a.request("DELETE", `/notes/${note.id}`, { token: alice.token })).status).toBeLessThan(300);
    await expect.poll(() => peer.about(note.uri).length, WAIT).toBe(2);
    const deletion = peer.about(note.uri)[1];
    expect(deletion.verified).toBe(true);
    expect(deletion.activity).toMatchObject({
      type: "Delete",
      actor: `${a.url}/accounts/${alice.id}`,
      to: PUBLIC,
      object: { type: "Tombstone", id: note.uri },
    });
  });

  it("a note nobody remote may see notifies no relay (a NOTIFY would serialize every note's commit)", async () => {
    const listener = new pg.Client({ connectionString: a.databaseUrl });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on("notification", (n) => heard.push(n.channel));
      await listener.query("LISTEN murmur_federation_outbox");
      await post(bob, { content: "only local followers" });
      await listener.query("SELECT 1");
      expect(heard).toEqual([]);
      await post(alice, { content: "remote followers" });
      await expect.poll(() => heard.length, WAIT).toBeGreaterThan(0);
    } finally {
      await listener.end();
    }
  });

  it("the database marks each follow whose follower is remote, and only those (the note's one probe)", async () => {
    const follows = await a.services.db.follow.findMany({ include: { follower: { select: { host: true } } } });
    expect(follows.filter((f) => f.remoteFollower).length).toBe(2);
    for (const f of follows) expect(f.remoteFollower).toBe(f.follower.host !== null);
  });

  it("the Note answers at its id for ActivityPub; REST clients get the REST note there", async () => {
    const note = await post(alice, { content: "dereference me" });
    const activityPub = await fetch(note.uri, { headers: { accept: AP } });
    expect(activityPub.status).toBe(200);
    expect(await activityPub.json()).toMatchObject({
      type: "Note",
      id: note.uri,
      content: "<p>dereference me</p>",
      attributedTo: `${a.url}/accounts/${alice.id}`,
    });
    for (const headers of [{ accept: "application/json" }, {} as Record<string, string>]) {
      const rest = await fetch(note.uri, { headers });
      expect(rest.status).toBe(200);
      expect(await rest.json()).toMatchObject({ id: note.id, content: "dereference me" });
    }
    // A followers-only note is no one's to read there unasked: REST's answer to an anonymous client.
    const hidden = await post(alice, { content: "hidden", visibility: "followers" });
    const refused = await fetch(hidden.uri, { headers: { accept: AP } });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toEqual({ error: "NOTE_NOT_FOUND" });
  });
});
