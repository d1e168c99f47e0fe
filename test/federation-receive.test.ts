// Notes of other servers received (docs/federation.md, "Remote notes received"). Two Murmur servers,
// A (127.0.0.2) and B (127.0.0.3): alice on A follows bob on B, and what bob posts reaches A, where
// it is read through REST as alice and others see it. Activities no Murmur sends yet (Update,
// Announce, quotes, long reply chains, hostile content) come from a peer of this file on
// 127.0.0.4 playing two actors, mallory and eve, that signs what it posts to A's inbox and serves
// its actors and notes for A to fetch.
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { signRequest } from "@fedify/fedify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_FETCHES } from "../src/federation/remote-notes.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { type TestAccount, uploadFile } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { image } from "./support/media.ts";

const AP = "application/activity+json";
const PUBLIC = "https://www.w3.org/ns/activitystreams#Public";
/** Delivery and the handling of what arrives are asynchronous: a bounded wait. */
const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let b: ListeningServer;
let aHost: string;
let alice: TestAccount;
let carol: TestAccount;
let dan: TestAccount;
let bob: TestAccount;

let peer: http.Server;
let peerUrl: string;
let keys: CryptoKeyPair;
/** What the peer serves besides its actors: objects by path. */
const served = new Map<string, unknown>();
let sequence = 0;

const actorUri = (name: string) => `${peerUrl}/users/${name}`;

function answerPeer(request: http.IncomingMessage, response: http.ServerResponse): void {
  const path = new URL(request.url ?? "/", peerUrl).pathname;
  const name = /^\/users\/(\w+)$/.exec(path)?.[1];
  if (request.method === "GET" && (name === "mallory" || name === "eve")) {
    const pem = KeyObject.from(keys.publicKey).export({ type: "spki", format: "pem" }).toString();
    response.writeHead(200, { "content-type": AP }).end(
      JSON.stringify({
        "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
        id: actorUri(name),
        type: "Person",
        preferredUsername: name,
        inbox: `${actorUri(name)}/inbox`,
        followers: `${actorUri(name)}/followers`,
        publicKey: { id: `${actorUri(name)}#main-key`, owner: actorUri(name), publicKeyPem: pem },
      }),
    );
    return;
  }
  const object = request.method === "GET" ? served.get(path) : undefined;
  if (object) response.writeHead(200, { "content-type": AP }).end(JSON.stringify(object));
  else response.writeHead(request.method === "POST" ? 202 : 404).end();
}

beforeAll(async () => {
  keys = await rsaKeyPair();
  peer = http.createServer(answerPeer);
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.4", resolve));
  peerUrl = `http://127.0.0.4:${(peer.address() as AddressInfo).port}`;
  [a, b] = await Promise.all([listening("127.0.0.2"), listening("127.0.0.3")]);
  aHost = a.services.config.localHost;
  [{ alice, bob: carol, stranger: dan }, { bob }] = await Promise.all([
    cast(a, { alice: "alice", bob: "carol", stranger: "dan" }),
    cast(b, { bob: "bob" }),
  ]);
  // alice (and carol) on A follow bob on B: bob's notes are delivered to A.
  for (const who of [alice, carol]) {
    const follow = await a.request("POST", `/accounts/@bob@${b.services.config.localHost}/follow`, {
      token: who.token,
      body: {},
    });
    expect(follow.body).toEqual({ pending: true });
  }
  // expect.poll only runs in a test.
  for (let waited = 0; (await a.services.db.follow.count()) < 2; waited += 50) {
    if (waited > WAIT.timeout) throw new Error("bob's Accepts did not arrive");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 60_000);

afterAll(async () => {
  for (const server of [a, b]) {
    await closeFederating(server);
  }
  peer?.close();
});

/** bob posts on B; the note's ActivityPub id. */
async function bobPosts(body: Record<string, unknown>, path = "/notes"): Promise<string> {
  const answer = await b.request("POST", path, { token: bob.token, body });
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  return `${b.url}/notes/${(answer.body as { id: string }).id}`;
}

/** The row A stored for remote note `uri`, once it is there. */
async function stored(uri: string) {
  await expect.poll(() => a.services.db.note.count({ where: { uri } }), WAIT).toBe(1);
  return a.services.db.note.findUniqueOrThrow({ where: { uri } });
}

/** The ids of the notes of `path` on A, as `who` reads them. */
async function noteIds(path: string, who?: TestAccount): Promise<string[]> {
  const answer = await a.request("GET", path, { token: who?.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body as { id: string }[]).map((note) => note.id);
}

/** `activity` from the peer's actor `signer`, signed, to A's shared inbox: 202. */
async function deliver(activity: Record<string, unknown>, signer = "mallory"): Promise<void> {
  const body = JSON.stringify({ "@context": "https://www.w3.org/ns/activitystreams", ...activity });
  const request = await signRequest(
    new Request(`${a.url}/inbox`, { method: "POST", headers: { "content-type": AP }, body }),
    keys.privateKey,
    new URL(`${actorUri(signer)}#main-key`),
    { spec: "draft-cavage-http-signatures-12" },
  );
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const answer = await a.request("POST", "/inbox", { headers, payload: body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
}

/** A Note of the peer's `author` (served at its id), public unless said otherwise. */
function peerNote(author: string, fields: Record<string, unknown> = {}) {
  const path = `/notes/${++sequence}`;
  const note = {
    id: `${peerUrl}${path}`,
    type: "Note",
    attributedTo: actorUri(author),
    content: `<p>note ${sequence}</p>`,
    to: PUBLIC,
    cc: `${actorUri(author)}/followers`,
    ...fields,
  };
  served.set(path, { "@context": "https://www.w3.org/ns/activitystreams", ...note });
  return note;
}

function create(note: { id: string; attributedTo: string }) {
  return { id: `${note.id}/activity/${++sequence}`, type: "Create", actor: note.attributedTo, object: note };
}

const aliceUri = () => `${a.url}/accounts/${alice.id}`;

async function mentions(who: TestAccount): Promise<string[]> {
  const answer = await a.request("GET", "/notifications", { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { notifications: { type: string; noteId?: string }[] }).notifications
    .filter((n) => n.type === "mentioned")
    .map((n) => n.noteId ?? "");
}

describe("notes of a followed remote account", () => {
  it("reach its local followers' home timelines by their visibility; a direct note only its recipient", async () => {
    const publicUri = await bobPosts({ content: "Hello <b>A</b>\nline two" });
    const homeUri = await bobPosts({ content: "home", visibility: "home", cw_comment: "spoiler" });
    const followersUri = await bobPosts({ content: "followers", visibility: "followers" });
    const directUri = await bobPosts({ content: "psst", visibility: "direct", send_to: `@alice@${aHost}` });
    const [pub, home, followers, direct] = await Promise.all([publicUri, homeUri, followersUri, directUri].map(stored));
    expect(pub).toMatchObject({ content: "Hello <b>A</b>\nline two", visibility: "public", url: publicUri });
    expect(home).toMatchObject({ content: "home", cwComment: "spoiler", visibility: "home" });
    expect(followers.visibility).toBe("followers");
    expect(direct).toMatchObject({ visibility: "direct", sendToId: BigInt(alice.id) });

    const ids = [pub, home, followers].map((n) => n.id.toString());
    expect(await noteIds("/timeline/home", alice)).toEqual(expect.arrayContaining(ids));
    expect(await noteIds("/timeline/home", carol)).toEqual(expect.arrayContaining(ids));
    // The direct note: its recipient's alone, and she hears of it.
    expect((await a.request("GET", `/notes/${direct.id}`, { token: alice.token })).status).toBe(200);
    expect((await a.request("GET", `/notes/${direct.id}`, { token: carol.token })).body).toEqual({
      error: "NOTE_NOT_FOUND",
    });
    expect(await mentions(alice)).toContain(direct.id.toString());
    // A followers-only note: not to one who does not follow bob.
    expect((await a.request("GET", `/notes/${followers.id}`, { token: dan.token })).status).toBe(404);
    expect((await a.request("GET", `/notes/${home.id}`, { token: dan.token })).status).toBe(200);
    // Counted as bob's notes here.
    const author = await a.services.db.account.findUniqueOrThrow({ where: { id: pub.authorId } });
    expect(author.notesCount).toBe(4);
  });

  it("the global timeline stays local unless federated=true, in REST and GraphQL; Note.url is its page", async () => {
    const uri = await bobPosts({ content: "global?" });
    const note = await stored(uri);
    const local = await a.request("POST", "/notes", { token: alice.token, body: { content: "local" } });
    const localId = (local.body as { id: string }).id;
    const global = await noteIds("/timeline/global");
    expect(global).toContain(localId);
    expect(global).not.toContain(note.id.toString());
    expect(await noteIds("/timeline/global?federated=true")).toEqual(
      expect.arrayContaining([localId, note.id.toString()]),
    );
    expect((await a.request("GET", "/timeline/global?federated=maybe")).body).toEqual({ error: "INVALID_REQUEST" });
    const page = async (federated: boolean) => {
      const query =
        "query($f: Boolean) { globalTimeline(federated: $f) { ... on NoteConnection { edges { node { id url } } } } }";
      const data = await gql(a, query, { f: federated });
      return (data.globalTimeline.edges as { node: { id: string; url: string } }[]).map((edge) => edge.node);
    };
    expect((await page(false)).map((n) => n.id)).not.toContain(note.id.toString());
    const federated = await page(true);
    expect(federated).toContainEqual({ id: note.id.toString(), url: uri });
    expect(federated).toContainEqual({ id: localId, url: `${a.url}/notes/${localId}` });
    // The same through a page GraphQL answers with SQL alone (src/graphql/compiled-pages.ts).
    const home = await gql(a, "{ homeTimeline { ... on NoteConnection { edges { node { id url } } } } }", {}, alice);
    expect(home.homeTimeline.edges.map((edge: { node: unknown }) => edge.node)).toContainEqual({
      id: note.id.toString(),
      url: uri,
    });
  });

  it("a reply to a note stored here links to it; its deletion there deletes it here, counters exact", async () => {
    const parentUri = await bobPosts({ content: "parent" });
    const parent = await stored(parentUri);
    const parentId = new URL(parentUri).pathname.split("/").pop();
    const replyUri = await bobPosts({ content: "reply" }, `/notes/${parentId}/reply`);
    expect((await stored(replyUri)).replyToId).toBe(parent.id);
    const before = (await a.services.db.account.findUniqueOrThrow({ where: { id: parent.authorId } })).notesCount;
    expect((await b.request("DELETE", `/notes/${parentId}`, { token: bob.token })).status).toBe(204);
    await expect.poll(() => a.services.db.note.count({ where: { uri: parentUri } }), WAIT).toBe(0);
    expect((await a.services.db.note.findUniqueOrThrow({ where: { uri: replyUri } })).replyToId).toBeNull();
    const author = await a.services.db.account.findUniqueOrThrow({ where: { id: parent.authorId } });
    expect(author.notesCount).toBe(before - 1);
  });
});

describe("attachments", () => {
  it("are drive files of the remote author at their origin's URL, not copied; they go with their note", async () => {
    const file = await uploadFile(b, bob, await image("png", 16, 16), "pic.png");
    const uri = await bobPosts({ content: "with a file", attachment_file_ids: [file.id] });
    const note = await stored(uri);
    const answer = await a.request("GET", `/notes/${note.id}`, { token: alice.token });
    expect(answer.status).toBe(200);
    const [attached] = (
      answer.body as { attachment_files: { url: string; mime: string; name: string; blur?: string }[] }
    ).attachment_files;
    expect(attached).toMatchObject({ url: file.url });
    const row = await a.services.db.driveFile.findFirstOrThrow({ where: { url: file.url } });
    expect(row).toMatchObject({ ownerId: note.authorId, mime: "image/png" });
    // Its blurhash (toot:blurhash, which Fedify's Document drops) and type are the ones B sent.
    const sent = await b.services.db.driveFile.findUniqueOrThrow({ where: { id: BigInt(file.id) } });
    expect(sent.blurhash).toBeTruthy();
    expect(row).toMatchObject({ blurhash: sent.blurhash, name: "pic.png" });
    expect(attached).toMatchObject({ blur: sent.blurhash });
    // Not copied: nothing of it is in A's storage.
    expect((await a.request("GET", `/files/${row.id}`)).body).toEqual({ error: "FILE_NOT_FOUND" });
    expect(
      (await b.request("DELETE", `/notes/${new URL(uri).pathname.split("/").pop()}`, { token: bob.token })).status,
    ).toBe(204);
    await expect.poll(() => a.services.db.driveFile.count({ where: { id: row.id } }), WAIT).toBe(0);
  });
});

describe("a thread across servers", () => {
  it("replies each way link to their parents on both servers", async () => {
    const rootUri = await bobPosts({ content: "root on B" });
    const root = await stored(rootUri);
    // alice answers on A; B stores her reply under bob's note.
    const answer = await a.request("POST", `/notes/${root.id}/reply`, {
      token: alice.token,
      body: { content: "from A" },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const aliceReplyUri = `${a.url}/notes/${(answer.body as { id: string }).id}`;
    await expect.poll(() => b.services.db.note.count({ where: { uri: aliceReplyUri } }), WAIT).toBe(1);
    const onB = await b.services.db.note.findUniqueOrThrow({ where: { uri: aliceReplyUri } });
    expect(onB.replyToId?.toString()).toBe(new URL(rootUri).pathname.split("/").pop());
    // bob answers her on B; A links his reply to her local note.
    const bobReplyUri = await bobPosts({ content: "from B again" }, `/notes/${onB.id}/reply`);
    expect((await stored(bobReplyUri)).replyToId?.toString()).toBe((answer.body as { id: string }).id);
  });
});

describe("renotes across servers", () => {
  it("bob's renote on B is one on A, and goes when he deletes it", async () => {
    const noteUri = await bobPosts({ content: "renoted on B" });
    const note = await stored(noteUri);
    const noteId = new URL(noteUri).pathname.split("/").pop();
    const renote = await b.request("POST", `/notes/${noteId}/renote`, { token: bob.token, body: {} });
    expect(renote.status, JSON.stringify(renote.body)).toBeLessThan(300);
    const where = { renoteId: note.id, authorId: note.authorId };
    await expect.poll(() => a.services.db.note.count({ where }), WAIT).toBe(1);
    const renoteId = (renote.body as { id: string }).id;
    expect((await b.request("DELETE", `/notes/${renoteId}`, { token: bob.token })).status).toBe(204);
    await expect.poll(() => a.services.db.note.count({ where }), WAIT).toBe(0);
  });
});

describe("activities of other servers", () => {
  it("a note nobody here cares about is dropped; one replying to a local note, mentioning or addressing a local account is kept", async () => {
    const ignored = peerNote("mallory");
    await deliver(create(ignored));
    const localNote = await a.request("POST", "/notes", { token: alice.token, body: { content: "mine" } });
    const reply = peerNote("mallory", { inReplyTo: `${a.url}/notes/${(localNote.body as { id: string }).id}` });
    const mention = peerNote("mallory", {
      tag: [{ type: "Mention", href: aliceUri(), name: `@alice@${aHost}` }],
    });
    const direct = peerNote("mallory", { to: aliceUri(), cc: [] });
    for (const note of [reply, mention, direct]) await deliver(create(note));
    expect((await stored(reply.id)).replyToId).toBe(BigInt((localNote.body as { id: string }).id));
    const mentioned = await stored(mention.id);
    expect((await stored(direct.id)).sendToId).toBe(BigInt(alice.id));
    await expect.poll(() => mentions(alice), WAIT).toContain(mentioned.id.toString());
    expect(await a.services.db.note.count({ where: { uri: ignored.id } })).toBe(0);
  });

  it("an activity delivered twice, or the same note in two Creates, stores it once and counts it once", async () => {
    const note = peerNote("mallory", { to: aliceUri(), cc: [] });
    const activity = create(note);
    await deliver(activity);
    await deliver(activity);
    await deliver(create(note));
    await deliver(create(note));
    await stored(note.id);
    const mallory = await a.services.db.account.findUniqueOrThrow({ where: { uri: actorUri("mallory") } });
    // Nothing else of the four left to handle: the queue is empty once each is done.
    await expect
      .poll(() => a.services.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM federation_messages`, WAIT)
      .toEqual([{ n: 0 }]);
    expect(await a.services.db.note.count({ where: { uri: note.id } })).toBe(1);
    expect(mallory.notesCount).toBe(await a.services.db.note.count({ where: { authorId: mallory.id } }));
  });

  it("Update and Delete apply only when the signer is the note's author", async () => {
    const note = peerNote("mallory", { to: aliceUri(), cc: [] });
    await deliver(create(note));
    const row = await stored(note.id);
    const edited = { ...note, content: "<p>edited</p>", summary: "now with a warning" };
    await deliver(
      {
        id: `${note.id}#update-eve`,
        type: "Update",
        actor: actorUri("eve"),
        object: { ...edited, attributedTo: actorUri("eve") },
      },
      "eve",
    );
    await deliver({ id: `${note.id}#delete-eve`, type: "Delete", actor: actorUri("eve"), object: note.id }, "eve");
    await deliver({ id: `${note.id}#update`, type: "Update", actor: actorUri("mallory"), object: edited });
    await expect
      .poll(() => a.services.db.note.findUnique({ where: { id: row.id } }), WAIT)
      .toMatchObject({ content: "edited", cwComment: "now with a warning" });
    await deliver({
      id: `${note.id}#delete`,
      type: "Delete",
      actor: actorUri("mallory"),
      object: { type: "Tombstone", id: note.id },
    });
    await expect.poll(() => a.services.db.note.count({ where: { id: row.id } }), WAIT).toBe(0);
  });

  it("a Delete that overtook its note's Create: the Create, come late, stores nothing", async () => {
    const note = peerNote("mallory", { to: aliceUri(), cc: [] });
    const queueEmpty = () =>
      expect
        .poll(() => a.services.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM federation_messages`, WAIT)
        .toEqual([{ n: 0 }]);
    await deliver({ id: `${note.id}#delete`, type: "Delete", actor: actorUri("mallory"), object: note.id });
    // The Create comes once the Delete is handled, as one sent again later does (the two handled
    // at the same moment are test/federation-delete-race.test.ts's).
    await queueEmpty();
    await deliver(create(note));
    // Handled too: the queue is empty once it is done.
    await queueEmpty();
    expect(await a.services.db.note.count({ where: { uri: note.id } })).toBe(0);
  });

  it("a Create sent again after its note's Delete does not bring the note back", async () => {
    const note = peerNote("mallory", { to: aliceUri(), cc: [] });
    const activity = create(note);
    await deliver(activity);
    const row = await stored(note.id);
    await deliver({ id: `${note.id}#delete`, type: "Delete", actor: actorUri("mallory"), object: note.id });
    await expect.poll(() => a.services.db.note.count({ where: { id: row.id } }), WAIT).toBe(0);
    // The same activity again (its sender never saw our answer), and the note in a new Create.
    await deliver(activity);
    await deliver(create(note));
    await expect
      .poll(() => a.services.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM federation_messages`, WAIT)
      .toEqual([{ n: 0 }]);
    expect(await a.services.db.note.count({ where: { uri: note.id } })).toBe(0);
  });

  it("an edit and then a deletion arriving after reactions to the note: the reactions stay with the edit, go with the note", async () => {
    const note = peerNote("mallory", { to: PUBLIC, cc: aliceUri() });
    await deliver(create(note));
    const row = await stored(note.id);
    // alice reacts here (its Like goes to the peer), and eve's Like comes from there.
    const reacted = await a.request("POST", `/notes/${row.id}/reaction`, {
      token: alice.token,
      body: { emoji: "🎉" },
    });
    expect(reacted.status, JSON.stringify(reacted.body)).toBeLessThan(300);
    await deliver(
      { id: `${note.id}#like-eve`, type: "Like", actor: actorUri("eve"), object: note.id, content: "👍" },
      "eve",
    );
    const counts = async () => (await a.request("GET", `/notes/${row.id}`, { token: alice.token })).body;
    await expect.poll(async () => (await counts()).reaction_counts, WAIT).toEqual({ "🎉": 1, "👍": 1 });
    await deliver({
      id: `${note.id}#update`,
      type: "Update",
      actor: actorUri("mallory"),
      object: { ...note, content: "<p>edited after the reactions</p>" },
    });
    await expect.poll(async () => (await counts()).content, WAIT).toBe("edited after the reactions");
    expect((await counts()).reaction_counts).toEqual({ "🎉": 1, "👍": 1 });
    await deliver({ id: `${note.id}#delete`, type: "Delete", actor: actorUri("mallory"), object: note.id });
    await expect
      .poll(async () => (await a.request("GET", `/notes/${row.id}`, { token: alice.token })).status, WAIT)
      .toBe(404);
    expect(await a.services.db.reaction.count({ where: { noteId: row.id } })).toBe(0);
  });

  it("Announce of a local note is a renote (its author notified), gone with its Undo; a quote links its note", async () => {
    const local = await a.request("POST", "/notes", { token: alice.token, body: { content: "renote me" } });
    const localId = (local.body as { id: string }).id;
    const announce = {
      id: `${actorUri("mallory")}/announces/${++sequence}`,
      type: "Announce",
      actor: actorUri("mallory"),
      object: `${a.url}/notes/${localId}`,
      to: PUBLIC,
    };
    await deliver(announce);
    const renote = await stored(announce.id);
    expect(renote).toMatchObject({ renoteId: BigInt(localId), content: "", visibility: "public" });
    const notices = await a.request("GET", "/notifications", { token: alice.token });
    expect(notices.body.notifications).toContainEqual(
      expect.objectContaining({ type: "renoted", noteId: localId, content: "renote me" }),
    );
    await deliver({ id: `${announce.id}/undo`, type: "Undo", actor: actorUri("mallory"), object: announce });
    await expect.poll(() => a.services.db.note.count({ where: { uri: announce.id } }), WAIT).toBe(0);

    // Its term as Mastodon defines it in its context.
    const quote = peerNote("mallory", { content: "<p>quoting</p>", quoteUrl: `${a.url}/notes/${localId}` });
    await deliver({
      "@context": ["https://www.w3.org/ns/activitystreams", { quoteUrl: "as:quoteUrl" }],
      ...create(quote),
    });
    expect(await stored(quote.id)).toMatchObject({ renoteId: BigInt(localId), content: "quoting" });
  });

  it("a quote's inline `RE:` link, as Misskey writes it, is not part of its text", async () => {
    const local = await a.request("POST", "/notes", { token: alice.token, body: { content: "quote me" } });
    const target = `${a.url}/notes/${(local.body as { id: string }).id}`;
    const quote = peerNote("mallory", {
      content: `<p>quoting<br><br><span class="quote-inline">RE: <a href="${target}">${target}</a></span></p>`,
      quoteUrl: target,
      _misskey_quote: target,
    });
    await deliver({
      "@context": ["https://www.w3.org/ns/activitystreams", { quoteUrl: "as:quoteUrl" }],
      ...create(quote),
    });
    expect(await stored(quote.id)).toMatchObject({ content: "quoting" });
  });

  it(`a reply chain is fetched ${MAX_FETCHES} parents deep, no deeper`, async () => {
    // A chain 1,000 deep, every note of it served: no more than the bound is fetched.
    const chain = [peerNote("eve")];
    for (let i = 1; i < 1000; i++) chain.push(peerNote("eve", { inReplyTo: chain[i - 1].id }));
    const last = peerNote("mallory", { inReplyTo: chain[999].id, to: aliceUri(), cc: [] });
    await deliver(create(last));
    let row = await stored(last.id);
    const links: string[] = [];
    while (row.replyToId !== null) {
      row = await a.services.db.note.findUniqueOrThrow({ where: { id: row.replyToId } });
      links.push(row.uri as string);
    }
    expect(links).toEqual(
      chain
        .slice(-MAX_FETCHES)
        .reverse()
        .map((n) => n.id),
    );
    expect(await a.services.db.note.count({ where: { uri: { in: chain.map((n) => n.id) } } })).toBe(MAX_FETCHES);
  });

  it(`replies and quotes branching at every level cost ${MAX_FETCHES} fetches in all`, async () => {
    const eve = { author: { uri: actorUri("eve") } };
    const before = await a.services.db.note.count({ where: eve });
    const context = ["https://www.w3.org/ns/activitystreams", { quoteUrl: "as:quoteUrl" }];
    /** A served note of eve's answering one note and quoting another, each the same `levels - 1` deep. */
    const tree = (levels: number): { id: string } => {
      const note =
        levels === 0
          ? peerNote("eve")
          : peerNote("eve", { inReplyTo: tree(levels - 1).id, quoteUrl: tree(levels - 1).id });
      const path = new URL(note.id).pathname;
      served.set(path, { ...(served.get(path) as object), "@context": context });
      return note;
    };
    // 127 notes, each but the deepest answering and quoting two more.
    const note = peerNote("mallory", { inReplyTo: tree(6).id, to: aliceUri(), cc: [] });
    await deliver(create(note));
    expect((await stored(note.id)).replyToId).not.toBeNull();
    expect((await a.services.db.note.count({ where: eve })) - before).toBe(MAX_FETCHES);
  });

  it("hostile content: markup and scripts stripped, 10,000 mentions in bounded work, text cut to the limit", async () => {
    const junk = Array.from({ length: 10_000 }, (_, i) => ({ type: "Mention", href: `${peerUrl}/u/${i}` }));
    const note = peerNote("mallory", {
      content: `<script>alert(1)</script><p onclick="x()">Hi <a href="${aliceUri()}">@alice</a><img src=x onerror=y()></p>${"<b>z</b>".repeat(4000)}`,
      summary: "<i>cw</i>",
      tag: [{ type: "Mention", href: aliceUri() }, ...junk],
    });
    await deliver(create(note));
    const row = await stored(note.id);
    expect(row.content.startsWith("Hi @alice\n")).toBe(true);
    expect(row.content).not.toMatch(/[<>]|alert/);
    expect([...row.content].length).toBe(3000);
    expect(row.cwComment).toBe("cw");
    await expect.poll(() => mentions(alice), WAIT).toContain(row.id.toString());
  });
});
