// A silenced server's notes reach only those who follow its accounts (docs/federation.md#moderation).
// Server A (127.0.0.2); P (127.0.0.7), a signing peer whose account p1 alice follows and carol does
// not, silenced by a moderator. What p1 sends is taken in; alice hears of it as before, carol
// hears of none of it; p1's notes are on alice's home timeline, and on the federated global
// timeline and in search only for its followers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setInstancePolicy } from "../src/domain/instances/policies.ts";
import { unsilencedSql } from "../src/domain/instances/silence.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };
const PUBLIC = "https://www.w3.org/ns/activitystreams#Public";

let a: ListeningServer;
let peer: SigningPeer;
let alice: TestAccount;
let carol: TestAccount;
let sequence = 0;

beforeAll(async () => {
  a = await listening("127.0.0.2", { env: { FEDERATION_RETRY_MS: "100" } });
  peer = new SigningPeer("127.0.0.7");
  await peer.start();
  peer.serve("p1", "all");
  [alice, carol] = await Promise.all([account(a, "si_alice"), account(a, "si_carol")]);
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await closeFederating(a);
});

const actorOf = (who: TestAccount) => `${a.url}/accounts/${who.id}`;

/** p1's activity, POSTed signed to A's shared inbox. */
async function p1Sends(activity: Record<string, unknown>): Promise<void> {
  expect(
    await peer.post("p1", `${a.url}/inbox`, { id: `${peer.actor("p1")}#activities/${++sequence}`, ...activity }),
  ).toBe(202);
}

/** p1's note, public (or to `to` alone), mentioning `mentioned`; its id on A once stored (null: not stored). */
async function p1Posts(content: string, mentioned: TestAccount[], to?: TestAccount): Promise<string | null> {
  const uri = `${peer.url}/notes/${++sequence}`;
  await p1Sends({
    type: "Create",
    object: {
      id: uri,
      type: "Note",
      attributedTo: peer.actor("p1"),
      content: `<p>${content}</p>`,
      to: to ? [actorOf(to)] : [PUBLIC],
      cc: to ? [] : [`${peer.actor("p1")}/followers`],
      tag: mentioned.map((who) => ({ type: "Mention", href: actorOf(who), name: `@${who.name}` })),
    },
  });
  // Handled off the POST's answer: a note not kept leaves nothing to wait for, so a marker follows it.
  const marker = `${peer.url}/notes/${++sequence}`;
  await p1Sends({
    type: "Create",
    object: { id: marker, type: "Note", attributedTo: peer.actor("p1"), content: "<p>marker</p>", to: [PUBLIC] },
  });
  await expect.poll(() => a.services.db.note.count({ where: { uri: marker } }), WAIT).toBe(1);
  const note = await a.services.db.note.findUnique({ where: { uri } });
  return note?.id.toString() ?? null;
}

/** `who`'s notifications' types, but the acceptance of its own follows. */
async function notices(who: TestAccount): Promise<string[]> {
  const answer = await a.request("GET", "/notifications", { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { notifications: { type: string }[] }).notifications
    .map((n) => n.type)
    .filter((type) => type !== "followAccepted");
}

async function globalIds(who?: TestAccount): Promise<string[]> {
  const answer = await a.request("GET", "/timeline/global?federated=true", who ? { token: who.token } : {});
  expect(answer.status).toBe(200);
  return (answer.body as { id: string }[]).map((n) => n.id);
}

async function graphqlGlobalIds(who?: TestAccount): Promise<string[]> {
  const data = await gql(
    a,
    "{ globalTimeline(federated: true) { ... on NoteConnection { edges { node { id } } } } }",
    {},
    who,
  );
  return (data.globalTimeline.edges as { node: { id: string } }[]).map((edge) => edge.node.id);
}

async function found(query: string, who?: TestAccount): Promise<string[]> {
  const answer = await a.request(
    "GET",
    `/search/notes?query=${encodeURIComponent(query)}`,
    who ? { token: who.token } : {},
  );
  expect(answer.status).toBe(200);
  return (answer.body as { id: string }[]).map((n) => n.id);
}

describe("a silenced server", () => {
  it("adds nothing to the global timeline's and search's statements while no server has a policy", async () => {
    expect(await unsilencedSql(a.services, undefined)).toBeUndefined();
  });

  it("reaches its accounts' followers only: notices, the federated global timeline, search; home timelines as before", async () => {
    const followed = await a.request("POST", `/accounts/@p1@${peer.host}/follow`, { token: alice.token, body: {} });
    expect(followed.status).toBeLessThan(300);
    await expect.poll(async () => (await a.request("GET", "/accounts/si_alice")).body.following_count, WAIT).toBe(1);
    await setInstancePolicy(a.services, peer.host, "silence");

    const noteId = await p1Posts("hushedword hello both", [alice, carol]);
    expect(noteId).not.toBeNull();
    // alice follows p1: she hears of its mention, and sees its note everywhere.
    expect(await notices(alice)).toEqual(["mentioned"]);
    const home = await a.request("GET", "/timeline/home", { token: alice.token });
    expect((home.body as { id: string }[]).map((n) => n.id)).toContain(noteId);
    expect(await globalIds(alice)).toContain(noteId);
    expect(await graphqlGlobalIds(alice)).toContain(noteId);
    expect(await found("hushedword", alice)).toEqual([noteId]);
    // carol does not, nor does an anonymous reader.
    expect(await notices(carol)).toEqual([]);
    for (const who of [carol, undefined]) {
      expect(await globalIds(who)).not.toContain(noteId);
      expect(await graphqlGlobalIds(who)).not.toContain(noteId);
      expect(await found("hushedword", who)).toEqual([]);
    }
    // The local notes stay where they were.
    const local = await a.request("POST", "/notes", { token: carol.token, body: { content: "hushedword local" } });
    const localId = (local.body as { id: string }).id;
    expect(await globalIds()).toContain(localId);
    expect(await found("hushedword")).toEqual([localId]);

    // A direct note to carol is not kept; one to alice is, and heard of.
    expect(await p1Posts("psst carol", [carol], carol)).toBeNull();
    expect(await p1Posts("psst alice", [alice], alice)).not.toBeNull();
    expect(await notices(alice)).toEqual(["mentioned", "mentioned"]);

    // Its reactions, renotes and follows are taken in, unannounced to carol.
    const carolNote = `${a.url}/notes/${localId}`;
    const aliceNote = await a.request("POST", "/notes", { token: alice.token, body: { content: "by alice" } });
    const aliceNoteUri = `${a.url}/notes/${(aliceNote.body as { id: string }).id}`;
    await p1Sends({ type: "Like", object: carolNote, content: "🎉" });
    await p1Sends({ type: "Like", object: aliceNoteUri, content: "🎉" });
    await p1Sends({ type: "Announce", object: carolNote, to: [PUBLIC] });
    await p1Sends({ type: "Follow", object: actorOf(carol) });
    await expect.poll(async () => (await a.request("GET", "/accounts/si_carol")).body.followed_count, WAIT).toBe(1);
    await expect.poll(async () => (await notices(alice)).filter((t) => t === "reacted").length, WAIT).toBe(1);
    await expect
      .poll(async () => (await a.request("GET", `/notes/${localId}`)).body.reaction_counts, WAIT)
      .toEqual({ "🎉": 1 });
    await expect
      .poll(() => a.services.db.note.count({ where: { renoteId: BigInt(localId), uri: { not: null } } }), WAIT)
      .toBe(1);
    expect(await notices(carol)).toEqual([]);

    // Once carol follows p1 back, she hears of it.
    expect(
      (await a.request("POST", `/accounts/@p1@${peer.host}/follow`, { token: carol.token, body: {} })).status,
    ).toBeLessThan(300);
    await expect.poll(async () => (await a.request("GET", "/accounts/si_carol")).body.following_count, WAIT).toBe(1);
    const later = await p1Posts("hushedword again", [carol]);
    expect(await notices(carol)).toEqual(["mentioned"]);
    expect(await found("hushedword again", carol)).toEqual([later]);
  });
});
