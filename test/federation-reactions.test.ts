// Reactions across servers (docs/federation.md, "Reactions"). Two Murmur servers, A (127.0.0.2) and
// B (127.0.0.3): a note of bob on B is stored on A as a remote note is (its uri), alice reacts to it
// there, and B shows and notifies the reaction; her unreaction removes it. A peer of this file on
// 127.0.0.6 plays other software: its inbox records what A sends (signature checked), and as zed
// it signs the Likes, EmojiReacts and Undos it posts to A's inbox.
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { signRequest } from "@fedify/fedify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FALLBACK_REACTION } from "../src/domain/reactions/remote.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening, receivedPost } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { rsaKeyPair } from "./support/keys.ts";

const AP = "application/activity+json";
/** Delivery and the handling of what arrives are asynchronous: a bounded wait. */
const WAIT = { timeout: 15_000, interval: 50 };

let a: ListeningServer;
let b: ListeningServer;
let alice: TestAccount;
let bob: TestAccount;

let peer: http.Server;
let peerUrl: string;
let keys: CryptoKeyPair;
// biome-ignore lint/suspicious/noExplicitAny: activities as JSON, read field by field
const received: { verified: boolean; activity: any }[] = [];
let sequence = 0;

const zedUri = () => `${peerUrl}/users/zed`;

async function answerPeer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const path = new URL(request.url ?? "/", peerUrl).pathname;
  if (request.method === "POST") {
    const { body, verified } = await receivedPost(request, peerUrl);
    received.push({ verified, activity: JSON.parse(body.toString()) });
    return void response.writeHead(202).end();
  }
  if (path === "/.well-known/webfinger") {
    const links = [{ rel: "self", type: AP, href: zedUri() }];
    return void response.writeHead(200, { "content-type": "application/jrd+json" }).end(JSON.stringify({ links }));
  }
  if (path !== "/users/zed") return void response.writeHead(404).end();
  const pem = KeyObject.from(keys.publicKey).export({ type: "spki", format: "pem" }).toString();
  response.writeHead(200, { "content-type": AP }).end(
    JSON.stringify({
      "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
      id: zedUri(),
      type: "Person",
      preferredUsername: "zed",
      inbox: `${zedUri()}/inbox`,
      endpoints: { sharedInbox: `${peerUrl}/inbox` },
      publicKey: { id: `${zedUri()}#main-key`, owner: zedUri(), publicKeyPem: pem },
    }),
  );
}

beforeAll(async () => {
  keys = await rsaKeyPair();
  peer = http.createServer((request, response) => void answerPeer(request, response));
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.6", resolve));
  peerUrl = `http://127.0.0.6:${(peer.address() as AddressInfo).port}`;
  [a, b] = await Promise.all([listening("127.0.0.2"), listening("127.0.0.3")]);
  [{ alice }, { bob }] = await Promise.all([cast(a, { alice: "alice" }), cast(b, { bob: "bob" })]);
}, 60_000);

afterAll(async () => {
  for (const server of [a, b]) {
    await closeFederating(server);
  }
  peer?.close();
});

/** `author`'s note `uri` stored on A as a received remote note is (src/domain/notes/remote.ts). */
async function storedOnA(authorId: bigint, uri: string): Promise<string> {
  const id = a.services.ids.next();
  await a.services.db.note.create({ data: { id, authorId, content: "remote", visibility: "public", uri } });
  return id.toString();
}

/** The remote account `name` stored on A (resolved as any `@name@host` is). */
async function resolvedOnA(handle: string): Promise<bigint> {
  const answer = await a.request("GET", `/accounts/${handle}`, { token: alice.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return BigInt((answer.body as { id: string }).id);
}

/** Note `id`'s reactions on `server`: [the account's actor id, emoji], newest first. */
async function reactions(server: ListeningServer, id: string): Promise<[string, string][]> {
  const answer = await server.request("GET", `/notes/${id}/reactions`);
  expect(answer.status).toBe(200);
  const shown = answer.body as { reacted_by: string; emoji: string }[];
  const accounts = await server.services.db.account.findMany({
    where: { id: { in: shown.map((r) => BigInt(r.reacted_by)) } },
    select: { id: true, uri: true },
  });
  const uriOf = new Map(accounts.map((account) => [account.id.toString(), account.uri ?? "local"]));
  return shown.map((r) => [uriOf.get(r.reacted_by) ?? "", r.emoji]);
}

async function counts(server: ListeningServer, id: string): Promise<Record<string, number>> {
  const answer = await server.request("GET", `/notes/${id}`);
  expect(answer.status).toBe(200);
  return (answer.body as { reaction_counts: Record<string, number> }).reaction_counts;
}

async function reactedNotices(server: ListeningServer, who: TestAccount): Promise<string[]> {
  const answer = await server.request("GET", "/notifications", { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { notifications: { type: string; content?: string }[] }).notifications
    .filter((n) => n.type === "reacted")
    .map((n) => n.content ?? "");
}

/** zed posts `activity` to A's shared inbox, signed. */
async function zedPosts(activity: Record<string, unknown>): Promise<void> {
  const body = JSON.stringify({ "@context": "https://www.w3.org/ns/activitystreams", actor: zedUri(), ...activity });
  const request = await signRequest(
    new Request(`${a.url}/inbox`, { method: "POST", headers: { "content-type": AP }, body }),
    keys.privateKey,
    new URL(`${zedUri()}#main-key`),
    { spec: "draft-cavage-http-signatures-12" },
  );
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const answer = await a.request("POST", "/inbox", { headers, payload: body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
}

/** Received activities A has yet to handle. */
async function inboxQueued(): Promise<number> {
  const [{ n }] = await a.services.db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM federation_messages WHERE message->>'type' = 'inbox'`;
  return n;
}

const activityId = () => `${zedUri()}#activities/${++sequence}`;

/** alice's note on A, public; its ActivityPub id and its id. */
async function alicePosts(): Promise<{ id: string; uri: string }> {
  const answer = await a.request("POST", "/notes", { token: alice.token, body: { content: `note ${++sequence}` } });
  expect(answer.status).toBe(201);
  const id = (answer.body as { id: string }).id;
  return { id, uri: `${a.url}/notes/${id}` };
}

describe("reactions between two Murmur servers", () => {
  it("a reaction to a remote note reaches its server, shows there and notifies; removing it removes it there", async () => {
    const posted = await b.request("POST", "/notes", { token: bob.token, body: { content: "react to me" } });
    expect(posted.status).toBe(201);
    const onB = (posted.body as { id: string }).id;
    const bobOnA = await resolvedOnA(`@bob@${b.services.config.localHost}`);
    const onA = await storedOnA(bobOnA, `${b.url}/notes/${onB}`);

    const reacted = await a.request("POST", `/notes/${onA}/reaction`, { token: alice.token, body: { emoji: "🎉" } });
    expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
    const aliceOnB = `${a.url}/accounts/${alice.id}`;
    await expect.poll(() => reactions(b, onB), WAIT).toEqual([[aliceOnB, "🎉"]]);
    expect(await counts(b, onB)).toEqual({ "🎉": 1 });
    expect(await reactedNotices(b, bob)).toEqual(["🎉"]);
    // Remote accounts get no notifications: bob's is on B.
    expect(await a.services.db.notification.count({ where: { recipientId: bobOnA } })).toBe(0);

    expect((await a.request("DELETE", `/notes/${onA}/reaction`, { token: alice.token })).status).toBe(204);
    await expect.poll(() => reactions(b, onB), WAIT).toEqual([]);
    expect(await counts(b, onB)).toEqual({});
  });
});

describe("reactions sent to other software", () => {
  it("Like with content and _misskey_reaction; a custom emoji as :alias: with its Emoji tag; Undo(Like) names the Like", async () => {
    const zed = await resolvedOnA(`@zed@${new URL(peerUrl).host}`);
    const noteUri = `${peerUrl}/notes/${++sequence}`;
    const onA = await storedOnA(zed, noteUri);
    const fileId = a.services.ids.next();
    await a.services.db.driveFile.create({ data: { id: fileId, name: "blob.png", mime: "image/png", size: 1n } });
    const emojiId = a.services.ids.next();
    await a.services.db.customEmoji.create({ data: { id: emojiId, alias: "blobcat", fileId } });
    const custom = `<:blobcat:${emojiId}>`;

    const reacted = await a.request("POST", `/notes/${onA}/reaction`, { token: alice.token, body: { emoji: custom } });
    expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
    const likes = () => received.filter((r) => r.activity.type === "Like" && r.activity.object === noteUri);
    await expect.poll(() => likes().length, WAIT).toBe(1);
    const [{ verified, activity: like }] = likes();
    expect(verified).toBe(true);
    expect(like).toMatchObject({
      actor: `${a.url}/accounts/${alice.id}`,
      content: ":blobcat:",
      _misskey_reaction: ":blobcat:",
      tag: { type: "Emoji", name: ":blobcat:", icon: { type: "Image", url: `${a.url}/files/${fileId}` } },
    });

    expect((await a.request("DELETE", `/notes/${onA}/reaction`, { token: alice.token })).status).toBe(204);
    const undos = () => received.filter((r) => r.activity.type === "Undo" && r.activity.object?.id === like.id);
    await expect.poll(() => undos().length, WAIT).toBe(1);
    expect(undos()[0].verified).toBe(true);
    expect(undos()[0].activity.object).toMatchObject({ type: "Like", object: noteUri, content: ":blobcat:" });
  });

  it("a reaction to a local note sends nothing", async () => {
    const { id } = await alicePosts();
    const before = await a.services.db.federationOutbox.count();
    const reacted = await a.request("POST", `/notes/${id}/reaction`, { token: alice.token, body: { emoji: "👍" } });
    expect(reacted.status).toBe(200);
    expect(await a.services.db.federationOutbox.count()).toBe(before);
  });
});

describe("reactions received from other software", () => {
  it("Mastodon's Like (no content) is the fallback emoji, EmojiReact its own; each notifies the local author", async () => {
    const { id, uri } = await alicePosts();
    await zedPosts({ id: activityId(), type: "Like", object: uri });
    const zedOnA = zedUri();
    await expect.poll(() => reactions(a, id), WAIT).toEqual([[zedOnA, FALLBACK_REACTION]]);
    expect(await reactedNotices(a, alice)).toContain(FALLBACK_REACTION);

    const other = await alicePosts();
    await zedPosts({ "@context": PLEROMA, id: activityId(), type: "EmojiReact", object: other.uri, content: "🦀" });
    await expect.poll(() => reactions(a, other.id), WAIT).toEqual([[zedOnA, "🦀"]]);

    // Misskey's, with only _misskey_reaction; a remote custom emoji is the fallback.
    const third = await alicePosts();
    await zedPosts({
      "@context": ["https://www.w3.org/ns/activitystreams", MISSKEY],
      id: activityId(),
      type: "Like",
      object: third.uri,
      _misskey_reaction: "🍣",
    });
    await expect.poll(() => reactions(a, third.id), WAIT).toEqual([[zedOnA, "🍣"]]);
    const fourth = await alicePosts();
    await zedPosts({
      "@context": PLEROMA,
      id: activityId(),
      type: "EmojiReact",
      object: fourth.uri,
      content: ":blobfox:",
      tag: [{ type: "Emoji", name: ":blobfox:", icon: { type: "Image", url: `${peerUrl}/blobfox.png` } }],
    });
    await expect.poll(() => reactions(a, fourth.id), WAIT).toEqual([[zedOnA, FALLBACK_REACTION]]);
  });

  it("twice is once; a second Like of the same note changes nothing; Undo removes it; an Undo again changes nothing", async () => {
    const { id, uri } = await alicePosts();
    const like = { id: activityId(), type: "Like", object: uri, content: "🔥" };
    await Promise.all([zedPosts(like), zedPosts(like)]);
    await expect.poll(() => counts(a, id), WAIT).toEqual({ "🔥": 1 });
    await zedPosts({ id: activityId(), type: "Like", object: uri, content: "🌊" });
    await expect.poll(inboxQueued, WAIT).toBe(0);
    expect(await counts(a, id)).toEqual({ "🔥": 1 });

    const undo = { id: activityId(), type: "Undo", object: { ...like, actor: zedUri() } };
    await zedPosts(undo);
    await expect.poll(() => counts(a, id), WAIT).toEqual({});
    await zedPosts({ ...undo, id: activityId() });
    await expect.poll(inboxQueued, WAIT).toBe(0);
    expect(await reactions(a, id)).toEqual([]);
    expect(await counts(a, id)).toEqual({});
  });

  it("an Undo that arrives before its Like: the Like, when it comes, is no reaction", async () => {
    const { id, uri } = await alicePosts();
    const like = { id: activityId(), type: "Like", object: uri, content: "🐢" };
    await zedPosts({ id: activityId(), type: "Undo", object: { ...like, actor: zedUri() } });
    await expect.poll(inboxQueued, WAIT).toBe(0);
    await zedPosts(like);
    await expect.poll(inboxQueued, WAIT).toBe(0);
    expect(await reactions(a, id)).toEqual([]);
    expect(await counts(a, id)).toEqual({});
  });

  it("an Undo of someone else's Like removes nothing", async () => {
    const { id, uri } = await alicePosts();
    await zedPosts({ id: activityId(), type: "Like", object: uri, content: "🔥" });
    await expect.poll(() => counts(a, id), WAIT).toEqual({ "🔥": 1 });
    await zedPosts({
      id: activityId(),
      type: "Undo",
      object: { id: `${peerUrl}/users/other#likes/1`, type: "Like", actor: `${peerUrl}/users/other`, object: uri },
    });
    await expect.poll(inboxQueued, WAIT).toBe(0);
    expect(await counts(a, id)).toEqual({ "🔥": 1 });
  });
});

/** Pleroma's context, as far as EmojiReact goes. */
const PLEROMA = [
  "https://www.w3.org/ns/activitystreams",
  {
    litepub: "http://litepub.social/ns#",
    EmojiReact: "litepub:EmojiReact",
    toot: "http://joinmastodon.org/ns#",
    Emoji: "toot:Emoji",
  },
];
const MISSKEY = { misskey: "https://misskey-hub.net/ns#", _misskey_reaction: "misskey:_misskey_reaction" };
