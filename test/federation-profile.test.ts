// A local account's profile change and deletion told to other servers (docs/federation.md,
// "Profiles and deletions"). alice on A (127.0.0.2) is followed by bob on B (127.0.0.3), a Murmur
// server, and by zed and yan of a peer (test/support/peer.ts, 127.0.0.7), and follows xu of another
// peer (127.0.0.8). Her new profile reaches B, which shows it, and the first peer once (its shared
// inbox); her deletion reaches every one of those servers, and B deletes her account.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { PASSPHRASE, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { Peer } from "./support/peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let b: ListeningServer;
let alice: TestAccount;
let bob: TestAccount;
const followers = new Peer("127.0.0.7");
const followed = new Peer("127.0.0.8");

const aliceUri = () => `${a.url}/accounts/${alice.id}`;

beforeAll(async () => {
  await Promise.all([followers.start(), followed.start()]);
  [a, b] = await Promise.all([listening("127.0.0.2"), listening("127.0.0.3")]);
  [{ alice }, { bob }] = await Promise.all([cast(a, { alice: "alice" }), cast(b, { bob: "bob" })]);
  const follow = await b.request("POST", `/accounts/@alice@${a.services.config.localHost}/follow`, {
    token: bob.token,
    body: {},
  });
  expect(follow.body).toEqual({ pending: true });
  const [zed, yan, xu] = await Promise.all([
    followers.stored(a, "zed"),
    followers.stored(a, "yan"),
    followed.stored(a, "xu"),
  ]);
  await a.services.db.follow.createMany({
    data: [
      { followerId: zed.id, followeeId: BigInt(alice.id) },
      { followerId: yan.id, followeeId: BigInt(alice.id) },
      { followerId: BigInt(alice.id), followeeId: xu.id },
    ],
  });
  // expect.poll only runs in a test.
  for (let waited = 0; (await b.services.db.follow.count()) < 1; waited += 50) {
    if (waited > WAIT.timeout) throw new Error("alice's Accept did not arrive");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 60_000);

afterAll(async () => {
  for (const server of [a, b]) {
    await closeFederating(server);
  }
  await Promise.all([followers.stop(), followed.stop()]);
});

/** alice's account as B stores it. */
function aliceOnB() {
  return b.services.db.account.findUnique({
    where: { uri: aliceUri() },
    select: { nickname: true, bio: true, locked: true, deletedAt: true },
  });
}

const posts = (peer: Peer, type: string) => peer.posts.filter((post) => post.activity?.type === type);

describe("a local account's profile and deletion across servers", () => {
  it("a profile change is Update(Person) to its remote followers' servers, once each; B shows the new profile", async () => {
    const changed = await a.request("PATCH", "/accounts/alice", {
      token: alice.token,
      body: { nickname: "Alice Again", bio: "a new bio", locked: true },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await expect
      .poll(aliceOnB, WAIT)
      .toMatchObject({ nickname: "Alice Again", bio: "a new bio", locked: true, deletedAt: null });
    const onB = await b.request("GET", `/accounts/@alice@${a.services.config.localHost}`, { token: bob.token });
    expect(onB.body).toMatchObject({ nickname: "Alice Again", bio: "a new bio" });

    await expect.poll(() => posts(followers, "Update").length, WAIT).toBe(1);
    const [update] = posts(followers, "Update");
    expect(update.verified).toBe(true);
    expect(update.path).toBe("/inbox");
    expect(update.activity).toMatchObject({
      actor: aliceUri(),
      object: { type: "Person", id: aliceUri(), name: "Alice Again", summary: "<p>a new bio</p>" },
    });
    // Nobody the account follows but does not follow it back is sent its profile.
    expect(posts(followed, "Update")).toEqual([]);
  });

  it("an avatar set, and unset by deleting its file, is each an Update", async () => {
    const file = (await uploadFile(a, alice, await image("png", 32, 32), "me.png")).id;
    const set = await a.request("PATCH", "/accounts/alice", { token: alice.token, body: { avatar_file_id: file } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    await expect.poll(() => posts(followers, "Update").length, WAIT).toBe(2);
    expect(posts(followers, "Update")[1].activity.object.icon).toMatchObject({ url: `${a.url}/files/${file}` });
    expect((await a.request("DELETE", `/drive/${file}`, { token: alice.token })).status).toBe(204);
    await expect.poll(() => posts(followers, "Update").length, WAIT).toBe(3);
    expect(posts(followers, "Update")[2].activity.object.icon).toBeUndefined();
  });

  it("a deletion is Delete(Person) to its followers' and followees' servers; B deletes the account", async () => {
    const deleted = await a.request("DELETE", "/accounts/alice", {
      token: alice.token,
      body: { passphrase: PASSPHRASE },
    });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    await expect.poll(async () => (await aliceOnB())?.deletedAt ?? null, WAIT).not.toBeNull();
    for (const peer of [followers, followed]) {
      await expect.poll(() => posts(peer, "Delete").length, WAIT).toBeGreaterThan(0);
      expect(posts(peer, "Delete")[0].activity).toMatchObject({ actor: aliceUri(), object: aliceUri() });
    }
  });
});
