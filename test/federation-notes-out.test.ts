// Local notes' other activities (docs/federation.md#notes): a Murmur server on 127.0.0.2 and two
// peers (test/support/peer.ts) whose inboxes record each POST with its signature checked. Peer 1
// (127.0.0.3) has a follower of alice; peer 2 (127.0.0.4) follows nobody here, and its accounts
// reach bob's notes only as the authors of notes bob renotes, quotes or replies to, or as names
// his text mentions. A plain renote is Announce (its deletion Undo(Announce)); a quote a Note with
// quoteUrl; a reply to a remote note has inReplyTo its uri; attachments are Documents; mentions
// of other servers' accounts are resolved and tagged, and their server is sent the note.
import { verifyJsonLd } from "@fedify/fedify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { safeDocumentLoader } from "../src/federation/document-loader.ts";
import type { Account } from "../src/generated/prisma/client.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { Peer } from "./support/peer.ts";

const WAIT = { timeout: 15_000, interval: 50 };
const PUBLIC = "https://www.w3.org/ns/activitystreams#Public";

let a: ListeningServer;
let peer1: Peer;
let peer2: Peer;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;
/** Peer 2's account whose note bob answers. */
let p2: Account;
/** p2's note, stored here as the receiving side stores one: its `uri` is its id. */
let remoteNote: { id: string; uri: string };

async function post(
  who: TestAccount,
  path: string,
  body: Record<string, unknown>,
): Promise<{ id: string; uri: string }> {
  const answer = await a.request("POST", path, { token: who.token, body });
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  const id = (answer.body as { id: string }).id;
  return { id, uri: `${a.url}/notes/${id}` };
}

const actorOf = (who: TestAccount) => `${a.url}/accounts/${who.id}`;

beforeAll(async () => {
  peer1 = new Peer("127.0.0.3");
  peer2 = new Peer("127.0.0.4");
  await Promise.all([peer1.start(), peer2.start()]);
  a = await listening("127.0.0.2");
  ({ alice, bob, carol } = await cast(a, { alice: "alice", bob: "bob", carol: "carol" }));
  const r1 = await peer1.stored(a, "r1");
  p2 = await peer2.stored(a, "p2");
  await a.services.db.follow.create({ data: { followerId: r1.id, followeeId: BigInt(alice.id) } });
  const id = a.services.ids.next();
  const uri = `${peer2.url}/notes/${id}`;
  await a.services.db.note.create({ data: { id, authorId: p2.id, content: "remote words", uri, url: uri } });
  remoteNote = { id: id.toString(), uri };
}, 30_000);

afterAll(async () => {
  await closeFederating(a);
  await Promise.all([peer1?.stop(), peer2?.stop()]);
});

describe("renotes and quotes", () => {
  it("a plain renote is Announce of the note's id to the renoter's followers; its deletion Undo(Announce)", async () => {
    const original = await post(bob, "/notes", { content: "boost me" });
    const renote = await post(alice, `/notes/${original.id}/renote`, {});
    await expect.poll(() => peer1.about(original.uri).length, WAIT).toBe(1);
    const [announce] = peer1.about(original.uri);
    expect(announce.verified).toBe(true);
    expect(announce.activity).toMatchObject({
      type: "Announce",
      id: `${renote.uri}#announce`,
      actor: actorOf(alice),
      object: original.uri,
      to: PUBLIC,
      cc: expect.arrayContaining([`${actorOf(alice)}/followers`, actorOf(bob)]),
    });
    expect((await a.request("DELETE", `/notes/${renote.id}`, { token: alice.token })).status).toBeLessThan(300);
    await expect.poll(() => peer1.about(`${renote.uri}#announce`).length, WAIT).toBe(1);
    expect(peer1.about(`${renote.uri}#announce`)[0].activity).toMatchObject({
      type: "Undo",
      actor: actorOf(alice),
      object: { type: "Announce", id: `${renote.uri}#announce` },
    });
  });

  it("a note deleted takes back its plain renotes' Announces: Undo(Announce) to each renoter's followers", async () => {
    const original = await post(bob, "/notes", { content: "going soon" });
    const renote = await post(alice, `/notes/${original.id}/renote`, {});
    await expect.poll(() => peer1.about(original.uri).length, WAIT).toBe(1);
    expect((await a.request("DELETE", `/notes/${original.id}`, { token: bob.token })).status).toBeLessThan(300);
    await expect.poll(() => peer1.about(`${renote.uri}#announce`).length, WAIT).toBe(1);
    expect(peer1.about(`${renote.uri}#announce`)[0].activity).toMatchObject({
      type: "Undo",
      id: `${renote.uri}#undo`,
      actor: actorOf(alice),
      to: PUBLIC,
    });
  });

  it("a renote of a remote note announces its uri, and its author's server receives it with no follower there", async () => {
    const renote = await post(bob, `/notes/${remoteNote.id}/renote`, {});
    await expect.poll(() => peer2.about(remoteNote.uri).length, WAIT).toBe(1);
    const [announce] = peer2.about(remoteNote.uri);
    expect(announce.path).toBe("/inbox");
    expect(announce.activity).toMatchObject({ type: "Announce", id: `${renote.uri}#announce`, actor: actorOf(bob) });
    expect(announce.activity.cc).toEqual(expect.arrayContaining([p2.uri]));
    expect((await a.request("DELETE", `/notes/${renote.id}`, { token: bob.token })).status).toBeLessThan(300);
    await expect.poll(() => peer2.about(`${renote.uri}#announce`).length, WAIT).toBe(1);
    expect(peer2.about(`${renote.uri}#announce`)[0].activity.type).toBe("Undo");
    // bob has no follower on peer 1.
    expect(peer1.posts.filter((p) => JSON.stringify(p.activity).includes(renote.uri))).toEqual([]);
  });

  it("a quote is a Note with quoteUrl, _misskey_quote and quoteUri the quoted note's id", async () => {
    const quote = await post(bob, `/notes/${remoteNote.id}/renote`, { content: "so true" });
    await expect.poll(() => peer2.about(quote.uri).length, WAIT).toBe(1);
    expect(peer2.about(quote.uri)[0].activity).toMatchObject({
      type: "Create",
      object: {
        type: "Note",
        id: quote.uri,
        content: "<p>so true</p>",
        quoteUrl: remoteNote.uri,
        _misskey_quote: remoteNote.uri,
        quoteUri: remoteNote.uri,
      },
    });
    // A quote of a local note carries its local id.
    const local = await post(alice, "/notes", { content: "quotable" });
    const localQuote = await post(alice, `/notes/${local.id}/renote`, { content: "indeed" });
    await expect.poll(() => peer1.about(localQuote.uri).length, WAIT).toBe(1);
    expect(peer1.about(localQuote.uri)[0].activity.object.quoteUrl).toBe(local.uri);
  });
});

describe("replies, attachments and mentions", () => {
  it("a reply to a remote note: inReplyTo its uri, its author tagged and cc'd, its server sent it with no follower there", async () => {
    const reply = await post(bob, `/notes/${remoteNote.id}/reply`, { content: "I agree" });
    await expect.poll(() => peer2.about(reply.uri).length, WAIT).toBe(1);
    const [{ path, verified, activity }] = peer2.about(reply.uri);
    expect(path).toBe("/inbox");
    expect(verified).toBe(true);
    expect(activity.object).toMatchObject({
      inReplyTo: remoteNote.uri,
      tag: { type: "Mention", href: p2.uri, name: `@p2@${peer2.host}` },
    });
    expect(activity.object.cc).toEqual(expect.arrayContaining([p2.uri, `${actorOf(bob)}/followers`]));
  });

  it("attachments are Documents: media type, the file's URL here, blurhash, name and sensitive", async () => {
    const files = [
      {
        id: a.services.ids.next(),
        name: "cat.png",
        mime: "image/png",
        nsfw: true,
        blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj",
      },
      { id: a.services.ids.next(), name: "notes.txt", mime: "text/plain", nsfw: false, blurhash: "" },
    ];
    await a.services.db.driveFile.createMany({
      data: files.map((f) => ({ ...f, ownerId: BigInt(alice.id), size: 10n })),
    });
    const note = await post(alice, "/notes", {
      content: "look",
      attachment_file_ids: files.map((f) => f.id.toString()),
    });
    const documents = [
      {
        type: "Document",
        mediaType: "image/png",
        url: `${a.url}/files/${files[0].id}`,
        blurhash: files[0].blurhash,
        name: "cat.png",
        sensitive: true,
      },
      {
        type: "Document",
        mediaType: "text/plain",
        url: `${a.url}/files/${files[1].id}`,
        name: "notes.txt",
        sensitive: false,
      },
    ];
    await expect.poll(() => peer1.about(note.uri).length, WAIT).toBe(1);
    const [{ verified, activity }] = peer1.about(note.uri);
    // The blurhash is a term of the JSON's own context, so the Linked Data signature over it holds.
    expect(verified).toBe(true);
    const loader = safeDocumentLoader({ allowPrivate: true, userAgent: "test-peer" });
    expect(await verifyJsonLd(activity, { documentLoader: loader, contextLoader: loader })).toBe(true);
    expect(activity["@context"]).toEqual(expect.arrayContaining([{ blurhash: "http://joinmastodon.org/ns#blurhash" }]));
    expect(activity.object.attachment).toEqual(documents);
    // The Note at its id says the same.
    const fetched = await fetch(note.uri, { headers: { accept: "application/activity+json" } });
    expect(((await fetched.json()) as { attachment: unknown }).attachment).toEqual(documents);
  });

  it("@name@host is resolved, tagged, cc'd and an anchor; its server is sent the note; an unknown one stays text", async () => {
    peer2.serve("m1");
    const text = `hi @m1@${peer2.host} and @carol, @ghost@${peer2.host}! see https://example.com/a?b=1&c=2.`;
    const note = await post(bob, "/notes", { content: text });
    await expect.poll(() => peer2.about(note.uri).length, WAIT).toBe(1);
    const m1 = peer2.actor("m1");
    const { activity } = peer2.about(note.uri)[0];
    expect(activity.object.content).toBe(
      `<p>hi <a href="${m1}" class="u-url mention">@m1@${peer2.host}</a> and ` +
        `<a href="${actorOf(carol)}" class="u-url mention">@carol</a>, @ghost@${peer2.host}! see ` +
        `<a href="https://example.com/a?b=1&amp;c=2">https://example.com/a?b=1&amp;c=2</a>.</p>`,
    );
    expect(activity.object.tag).toEqual(
      expect.arrayContaining([
        { type: "Mention", href: m1, name: `@m1@${peer2.host}` },
        { type: "Mention", href: actorOf(carol), name: `@carol@${new URL(a.url).host}` },
      ]),
    );
    expect(activity.cc).toEqual(expect.arrayContaining([m1]));
    // Stored as it was resolved; the text of the note is kept as written.
    expect(await a.services.db.account.count({ where: { uri: m1 } })).toBe(1);
    const rest = await a.request("GET", `/notes/${note.id}`, { token: bob.token });
    expect((rest.body as { content: string }).content).toBe(text);
    // Deleted, the note's Delete reaches the mentioned account's server too.
    expect((await a.request("DELETE", `/notes/${note.id}`, { token: bob.token })).status).toBeLessThan(300);
    await expect.poll(() => peer2.about(note.uri).map((p) => p.activity.type), WAIT).toEqual(["Create", "Delete"]);
  });

  it("a followers-only note naming another server's account is not sent there nor tags it (its readers are followers)", async () => {
    peer2.serve("m1");
    const hidden = await post(bob, "/notes", { content: `psst @m1@${peer2.host}`, visibility: "followers" });
    const open = await post(bob, "/notes", { content: `hello @m1@${peer2.host}` });
    // Written after the followers-only one: relayed after it, had it been written.
    await expect.poll(() => peer2.about(open.uri).length, WAIT).toBe(1);
    expect(peer2.about(hidden.uri)).toEqual([]);
    // Sent to alice's followers on peer 1, it tags nobody there: a receiver lets those a note tags read it.
    const r9 = await peer1.stored(a, "r9");
    const friends = await post(alice, "/notes", { content: `psst @r9@${peer1.host}`, visibility: "followers" });
    await expect.poll(() => peer1.about(friends.uri).length, WAIT).toBe(1);
    const { activity } = peer1.about(friends.uri)[0];
    expect(activity.object.tag).toBeUndefined();
    expect(JSON.stringify(activity)).not.toContain(`"${r9.uri}"`);
  });
});
