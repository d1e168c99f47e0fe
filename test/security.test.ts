// The security checklist in one place (docs/http.md#credentials): forged and misused tokens, tokens
// across a restart, a frozen account's old token, other accounts' resources by id (REST and
// GraphQL), path traversal and odd ids under /files/, stored files that cannot run as a page or a
// script, injection through search and every string input, oversized headers and bodies, slow
// clients. Where another file tests an item in depth, a comment names it; the re-check here is
// brief.

import { createPublicKey, randomBytes } from "node:crypto";
import fs from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import contentDisposition from "content-disposition";
import { base64url, decodeJwt, exportJWK, generateKeyPair, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PUBLIC_ACCOUNT_SELECT } from "../src/domain/accounts/service.ts";
import { ALLOWED_TYPES } from "../src/domain/drive/media.ts";
import { findVisibleNote } from "../src/domain/notes/service.ts";
import { parseSigningKey } from "../src/domain/sessions/tokens.ts";
import { timeline } from "../src/domain/timelines/service.ts";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, login, PASSPHRASE, register, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { apng, image, ogg, wav, webm } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

// The server's key is known here, so its public key can be derived as an attacker would find it.
const SIGNING_KEY = randomBytes(32).toString("base64");

let server: TestServer;
let port: number;
let moderator: TestAccount;
beforeAll(async () => {
  server = await startTestServer({ TOKEN_SIGNING_KEY: SIGNING_KEY });
  moderator = await account(server, "sec_mod", "moderator");
  // A real port too: raw requests (unnormalised paths, huge headers, slow clients) need one.
  await server.app.listen({ port: 0, host: "127.0.0.1" });
  port = (server.app.server.address() as AddressInfo).port;
});
afterAll(() => server?.close());

// ---------------------------------------------------------------------------------------------
// Helpers

/** A server on an existing database, as a restart of the process would make it. */
const reopen = (databaseUrl: string, env: Record<string, string>) => startTestServer(env, databaseUrl);

/** POSTs a GraphQL operation, which answers 200 without top-level errors; returns `data`. */
async function gql(query: string, variables: Record<string, unknown>, token?: string, target = server) {
  const answer = await target.request("POST", "/graphql", { body: { query, variables }, token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
  return answer.body.data;
}

/** A GraphQL operation with unusable credentials: HTTP 401 with WWW-Authenticate and the code. */
async function gqlRefused(query: string, token: string, target = server): Promise<string> {
  const answer = await target.request("POST", "/graphql", { body: { query }, token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(401);
  expect(answer.headers["www-authenticate"]).toBe("Bearer");
  return answer.body.errors[0].extensions.code;
}

/** A result union's outcome: the DomainError's code, or the success type's name. */
function outcome(result: { __typename: string; code?: string }): string {
  return result.__typename === "DomainError" ? String(result.code) : result.__typename;
}

const RESULT = "{ __typename ... on DomainError { code } }";

interface RawResponse {
  /** The status of the answer; undefined when the server closed without answering. */
  status: number | undefined;
  head: string;
  body: Buffer;
  /** The server closed the connection (rather than the wait running out). */
  closed: boolean;
  elapsedMs: number;
}

/**
 * Sends `request` over a fresh TCP connection and reads until the server closes it or `waitMs`
 * passes. `drip` then keeps sending one byte every `everyMs`, as a slow client does.
 */
function rawExchange(
  request: string | Buffer,
  options: { waitMs?: number; drip?: { text: string; everyMs: number }; to?: number } = {},
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(options.to ?? port, "127.0.0.1");
    const received: Buffer[] = [];
    let dripper: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(dripper);
      socket.destroy();
      const all = Buffer.concat(received);
      const split = all.indexOf("\r\n\r\n");
      const head = (split === -1 ? all : all.subarray(0, split)).toString("latin1");
      let body: Buffer = split === -1 ? Buffer.alloc(0) : all.subarray(split + 4);
      if (/^transfer-encoding: *chunked/im.test(head)) body = dechunk(body);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({
        status: match ? Number(match[1]) : undefined,
        head,
        body,
        closed,
        elapsedMs: performance.now() - started,
      });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 5000);
    socket.on("data", (data) => received.push(data));
    // A write after the server gave up fails with EPIPE or ECONNRESET; "close" follows.
    socket.on("error", () => {});
    socket.on("close", () => finish(true));
    socket.on("connect", () => {
      socket.write(request);
      const drip = options.drip;
      if (!drip) return;
      let i = 0;
      dripper = setInterval(() => {
        if (socket.writable) socket.write(drip.text[i++ % drip.text.length]);
      }, drip.everyMs);
    });
  });
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf("\r\n", at);
    if (eol === -1) break;
    const size = Number.parseInt(data.subarray(at, eol).toString("latin1"), 16);
    if (!size) break;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

function rawGet(target: string, extraHeaders = ""): Promise<RawResponse> {
  return rawExchange(`GET ${target} HTTP/1.1\r\nHost: murmur.test\r\n${extraHeaders}Connection: close\r\n\r\n`);
}

const note = async (who: TestAccount, body: Record<string, unknown>) => (await act.post(server, who, body)).id;
const freeze = (name: string) => act.moderate(server, moderator, name, "freeze");

function patchBio(who: { name: string }, headers: Record<string, string>, target = server): Promise<Answer> {
  return target.request("PATCH", `/accounts/${who.name}`, { body: { bio: "changed" }, headers });
}

const VIEWER = `query { r: viewer ${RESULT} }`;

// ---------------------------------------------------------------------------------------------
// 1-3. Forged and misused tokens (also test/sessions.test.ts "credentials")

describe("forged and misused tokens", () => {
  let tess: TestAccount;
  let claims: JWTPayload;
  beforeAll(async () => {
    tess = await account(server, "sec_tess");
    claims = decodeJwt(tess.token);
    expect(claims).toMatchObject({ sub: tess.id, typ: "access" });
  });

  /** Each token is refused with 401 INVALID_TOKEN on REST and GraphQL, and changes nothing. */
  async function expectRefused(tokens: string[]): Promise<void> {
    for (const token of tokens) {
      expectUnauthorized(await patchBio(tess, { authorization: `Bearer ${token}` }), "INVALID_TOKEN");
      // A public route too: an unusable credential is refused there as well, not ignored.
      expectUnauthorized(await server.request("GET", "/timeline/global", { token }), "INVALID_TOKEN");
      expect(await gqlRefused(VIEWER, token), token).toBe("INVALID_TOKEN");
    }
    const me = await server.request("GET", `/accounts/${tess.name}`);
    expect(me.body.bio).toBe("");
  }

  it("alg none, the real token's payload and no signature: 401 INVALID_TOKEN", async () => {
    const [, payload, signature] = tess.token.split(".");
    const header = (alg: string) => base64url.encode(JSON.stringify({ alg, typ: "JWT" }));
    await expectRefused([
      `${header("none")}.${payload}.`,
      `${header("None")}.${payload}.`,
      `${header("NONE")}.${payload}.`,
      `${header("nOnE")}.${payload}.`,
      // The real signature kept under a header that says none.
      `${header("none")}.${payload}.${signature}`,
      `${header("none")}.${payload}`,
    ]);
  });

  it("HS256 (HMAC) keyed with the server's public key, in every encoding: 401 INVALID_TOKEN", async () => {
    const publicKey = createPublicKey(parseSigningKey(SIGNING_KEY));
    // It is the server's own key: its tokens verify with it.
    await expect(jwtVerify(tess.token, publicKey, { algorithms: ["EdDSA"] })).resolves.toBeDefined();
    const jwk = publicKey.export({ format: "jwk" });
    const pem = publicKey.export({ type: "spki", format: "pem" }).toString();
    const raw = Buffer.from(String(jwk.x), "base64url");
    expect(raw.length).toBe(32);
    const secrets: Buffer[] = [
      raw,
      publicKey.export({ type: "spki", format: "der" }),
      Buffer.from(pem),
      Buffer.from(pem.trim()),
      Buffer.from(String(jwk.x)),
      Buffer.from(JSON.stringify(jwk)),
    ];
    const tokens: string[] = [];
    for (const secret of secrets) {
      for (const alg of ["HS256", "HS512"]) {
        tokens.push(await new SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).sign(new Uint8Array(secret)));
      }
    }
    await expectRefused(tokens);
  });

  it("EdDSA signed by an attacker's key, named in the header (embedded jwk), or a real signature over another payload: 401 INVALID_TOKEN", async () => {
    const attacker = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
    const jwk = await exportJWK(attacker.publicKey);
    const embedded = await new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", typ: "JWT", jwk })
      .sign(attacker.privateKey);
    const plain = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", typ: "JWT" }).sign(attacker.privateKey);
    // tess's real header and signature over the moderator's id.
    const [header, , signature] = tess.token.split(".");
    const swapped = `${header}.${base64url.encode(JSON.stringify({ ...claims, sub: moderator.id }))}.${signature}`;
    await expectRefused([embedded, plain, swapped]);
  });

  it("a refresh token in the Authorization header: 401 INVALID_TOKEN", async () => {
    expect(decodeJwt(tess.refreshToken).typ).toBe("refresh");
    await expectRefused([tess.refreshToken]);
    // And it still works where it belongs.
    expect((await server.request("POST", "/refresh", { body: { refresh_token: tess.refreshToken } })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// 4. A token from before a restart (also test/sessions.test.ts "TOKEN_SIGNING_KEY")

describe("a token from before a restart", () => {
  // The choice (docs/accounts.md#tokens): without TOKEN_SIGNING_KEY every start makes a fresh key,
  // so tokens die with the process. An operator who sets the key shares it between instances and
  // across restarts, so tokens signed under it stay good until they expire.
  it("with TOKEN_SIGNING_KEY: the restarted server accepts the old tokens; under another key, or none, 401 INVALID_TOKEN", async () => {
    const key = randomBytes(32).toString("base64");
    const first = await startTestServer({ TOKEN_SIGNING_KEY: key });
    const dora = await account(first, "sec_dora");
    const { databaseUrl } = first;
    await first.close();

    const same = await reopen(databaseUrl, { TOKEN_SIGNING_KEY: key });
    try {
      const accepted = await patchBio(dora, { authorization: `Bearer ${dora.token}` }, same);
      expect(accepted.status).toBe(200);
      expect(accepted.body.bio).toBe("changed");
      expect((await same.request("POST", "/refresh", { body: { refresh_token: dora.refreshToken } })).status).toBe(200);
    } finally {
      await same.close();
    }

    for (const env of [{ TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") }, {}] as Record<string, string>[]) {
      const other = await reopen(databaseUrl, env);
      try {
        expectUnauthorized(await patchBio(dora, { authorization: `Bearer ${dora.token}` }, other), "INVALID_TOKEN");
        const refresh = await other.request("POST", "/refresh", { body: { refresh_token: dora.refreshToken } });
        expectError(refresh, 400, "INVALID_TOKEN");
      } finally {
        await other.close();
      }
    }
  });

  it("without TOKEN_SIGNING_KEY: a restart on the same database ends every token (docs/accounts.md#tokens)", async () => {
    const before = await reopen(server.databaseUrl, {});
    const ed = await account(before, "sec_ed");
    await before.close();
    const after = await reopen(server.databaseUrl, {});
    try {
      expectUnauthorized(await patchBio(ed, { authorization: `Bearer ${ed.token}` }, after), "INVALID_TOKEN");
      expect(await gqlRefused(VIEWER, ed.token, after)).toBe("INVALID_TOKEN");
      expectError(
        await after.request("POST", "/refresh", { body: { refresh_token: ed.refreshToken } }),
        400,
        "INVALID_TOKEN",
      );
      // Logging in again is the way back.
      const fresh = await login(after, "sec_ed");
      expect((await patchBio(ed, { authorization: `Bearer ${fresh.authorization_token}` }, after)).status).toBe(200);
    } finally {
      await after.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 5. A frozen account's old token (also test/sessions.test.ts)

describe("a frozen account's old token", () => {
  it("is 403 YOU_ARE_FROZEN on every non-public operation, REST and GraphQL, and changes nothing; public ones stay open", async () => {
    const [fay, friend] = await Promise.all([account(server, "sec_fay"), account(server, "sec_fay_friend")]);
    const own = await note(fay, { content: "before the freeze" });
    const other = await note(friend, { content: "a public note" });
    await freeze(fay.name);

    const refused: [string, string, unknown?][] = [
      ["POST", "/notes", { content: "after the freeze" }],
      ["DELETE", `/notes/${own}`],
      ["POST", `/notes/${other}/reaction`, { emoji: "👍" }],
      ["POST", `/notes/${other}/bookmark`, {}],
      ["POST", `/notes/${other}/renote`, {}],
      ["POST", `/notes/${other}/reply`, { content: "hi" }],
      ["GET", "/timeline/home"],
      ["GET", "/timeline/conversations"],
      ["GET", "/notifications"],
      ["GET", "/bookmarks"],
      ["GET", "/drive"],
      ["POST", "/lists", { title: "frozen list" }],
      ["PATCH", `/accounts/${fay.name}`, { bio: "frozen bio" }],
      ["POST", `/accounts/${friend.name}/follow`, {}],
    ];
    for (const [method, url, body] of refused) {
      const answer = await server.request(method, url, { token: fay.token, body });
      expect({ request: `${method} ${url}`, status: answer.status, body: answer.body }).toEqual({
        request: `${method} ${url}`,
        status: 403,
        body: { error: "YOU_ARE_FROZEN" },
      });
    }
    expectError(
      await server.request("POST", "/refresh", { body: { refresh_token: fay.refreshToken } }),
      403,
      "YOU_ARE_FROZEN",
    );
    expect(outcome((await gql(VIEWER, {}, fay.token)).r)).toBe("YOU_ARE_FROZEN");
    const create = `mutation { r: createNote(input: { content: "via graphql" }) ${RESULT} }`;
    expect(outcome((await gql(create, {}, fay.token)).r)).toBe("YOU_ARE_FROZEN");

    // Nothing was done: one note, no follow, no reaction, bio unchanged.
    const { db } = server.services;
    expect(await db.note.count({ where: { authorId: BigInt(fay.id) } })).toBe(1);
    expect((await server.request("GET", `/notes/${other}`)).body.reactions).toEqual([]);
    const friendView = await server.request("GET", `/accounts/${friend.name}`);
    expect(friendView.body.followed_count).toBe(0);

    // Public operations stay open to it.
    expect((await server.request("GET", "/timeline/global", { token: fay.token })).status).toBe(200);
    expect((await server.request("GET", `/accounts/${friend.name}`, { token: fay.token })).status).toBe(200);
    expect((await server.request("GET", `/notes/${other}`, { token: fay.token })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// 6. Another account's resources by id (also test/notes, lists, drive, graphql-* tests)

describe("another account's resources by id", () => {
  // alice owns everything; bob follows alice, is the addressee of her direct note and a member
  // of her lists; mallory is a stranger with a valid token of her own.
  let alice: TestAccount;
  let bob: TestAccount;
  let mallory: TestAccount;
  let followersNote: string;
  let directNote: string;
  let publicNote: string;
  let privateList: string;
  let publicList: string;
  let file: { id: string; url: string };
  let aliceNotification: string;

  beforeAll(async () => {
    const names = { alice: "sec_alice", follower: "sec_bob", stranger: "sec_mallory" };
    ({ alice, follower: bob, stranger: mallory } = await cast(server, names));
    followersNote = await note(alice, { content: "zebraquartz for followers", visibility: "followers" });
    directNote = await note(alice, { content: "zebraquartz for bob", visibility: "direct", send_to: bob.id });
    publicNote = await note(alice, { content: "zebraquartz for all" });
    const created = await Promise.all([
      server.request("POST", "/lists", { token: alice.token, body: { title: "secret list" } }),
      server.request("POST", "/lists", { token: alice.token, body: { title: "open list", public: true } }),
    ]);
    [privateList, publicList] = created.map((a) => a.body.id);
    for (const id of [privateList, publicList]) {
      const assigned = await server.request("POST", `/lists/${id}`, {
        token: alice.token,
        body: { account_id: [bob.id] },
      });
      expect(assigned.status).toBe(200);
    }
    file = await uploadFile(server, alice, await image("png", 40, 40), "alice.png");
    const page = await server.request("GET", "/notifications", { token: alice.token });
    const followed = page.body.notifications.find((n: { type: string }) => n.type === "followed");
    expect(followed).toBeDefined();
    aliceNotification = followed.id;
  });

  it("notes: followers-only and direct notes are 404 NOTE_NOT_FOUND to a stranger by every route; they still are for those who may see them", async () => {
    for (const id of [followersNote, directNote]) {
      for (const who of [mallory.token, undefined]) {
        expectError(await server.request("GET", `/notes/${id}`, { token: who }), 404, "NOTE_NOT_FOUND");
      }
      const attempts: [string, string, unknown?][] = [
        ["DELETE", `/notes/${id}`],
        ["POST", `/notes/${id}/reaction`, { emoji: "👍" }],
        ["DELETE", `/notes/${id}/reaction`],
        ["POST", `/notes/${id}/bookmark`, {}],
        ["DELETE", `/notes/${id}/bookmark`],
        ["POST", `/notes/${id}/renote`, {}],
        ["POST", `/notes/${id}/reply`, { content: "peek" }],
      ];
      for (const [method, url, body] of attempts) {
        const answer = await server.request(method, url, { token: mallory.token, body });
        expect({ request: `${method} ${url}`, answer: answer.body, status: answer.status }).toEqual({
          request: `${method} ${url}`,
          answer: { error: "NOTE_NOT_FOUND" },
          status: 404,
        });
      }
      for (const who of [alice, bob]) {
        const seen = await server.request("GET", `/notes/${id}`, { token: who.token });
        expect(seen.status).toBe(200);
        expect(seen.body.reactions).toEqual([]);
      }
    }
    // A note it may see but not change: 403 NO_PERMISSION, and the note stays.
    expectError(await server.request("DELETE", `/notes/${publicNote}`, { token: mallory.token }), 403, "NO_PERMISSION");
    expect((await server.request("GET", `/notes/${publicNote}`)).status).toBe(200);
    expect(await server.services.db.bookmark.count({ where: { accountId: BigInt(mallory.id) } })).toBe(0);
  });

  it("notes: every endpoint that returns notes leaves them out for a stranger (account timeline, search)", async () => {
    const ids = (answer: Answer) => (answer.body as { id: string }[]).map((n) => n.id);
    const timeline = await server.request("GET", `/timeline/accounts/${alice.name}`, { token: mallory.token });
    expect(ids(timeline)).toEqual([publicNote]);
    const search = await server.request("GET", "/search/notes?query=zebraquartz", { token: mallory.token });
    expect(ids(search)).toEqual([publicNote]);
    const bobSearch = await server.request("GET", "/search/notes?query=zebraquartz", { token: bob.token });
    expect(ids(bobSearch).sort()).toEqual([followersNote, directNote, publicNote].sort());
  });

  it("lists: another account's private list is 404 LIST_NOTFOUND; no list of another's can be changed", async () => {
    expectError(await server.request("GET", `/lists/${privateList}`, { token: mallory.token }), 404, "LIST_NOTFOUND");
    expectError(await server.request("GET", `/lists/${privateList}`), 404, "LIST_NOTFOUND");
    expectError(
      await server.request("GET", `/lists/${privateList}/notes`, { token: mallory.token }),
      404,
      "LIST_NOTFOUND",
    );
    for (const id of [privateList, publicList]) {
      const attempts: [string, unknown?][] = [
        ["PATCH", { title: "pwned", public: true }],
        ["POST", { account_id: [mallory.id] }],
        ["DELETE", { account_id: [bob.id] }],
        ["DELETE", undefined],
        ["DELETE", {}],
      ];
      for (const [method, body] of attempts) {
        const answer = await server.request(method, `/lists/${id}`, { token: mallory.token, body });
        expect({ request: `${method} ${JSON.stringify(body)}`, status: answer.status, body: answer.body }).toEqual({
          request: `${method} ${JSON.stringify(body)}`,
          status: 404,
          body: { error: "LIST_NOTFOUND" },
        });
      }
    }
    const mine = await server.request("GET", `/lists/accounts/${alice.id}`, { token: mallory.token });
    expect(mine.body.map((l: { id: string }) => l.id)).toEqual([publicList]);
    // Both lists are as alice left them.
    for (const [id, title] of [
      [privateList, "secret list"],
      [publicList, "open list"],
    ]) {
      const list = await server.request("GET", `/lists/${id}`, { token: alice.token });
      expect(list.status).toBe(200);
      expect(list.body.title).toBe(title);
      expect(list.body.assignees.map((a: { id: string }) => a.id)).toEqual([bob.id]);
    }
    expect(await server.services.db.notification.count({ where: { recipientId: BigInt(mallory.id) } })).toBe(0);
  });

  it("drive: another account's file is 404 FILE_NOT_FOUND by id, 404 ATTACHMENT_NOT_FOUND to attach, and FILE_NOT_FOUND as an avatar", async () => {
    expectError(await server.request("GET", `/drive/${file.id}`, { token: mallory.token }), 404, "FILE_NOT_FOUND");
    expectError(
      await server.request("PUT", `/drive/${file.id}`, { token: mallory.token, body: { nsfw: true } }),
      404,
      "FILE_NOT_FOUND",
    );
    expectError(await server.request("DELETE", `/drive/${file.id}`, { token: mallory.token }), 404, "FILE_NOT_FOUND");
    const attach = { content: "look", attachment_file_ids: [file.id] };
    expectError(
      await server.request("POST", "/notes", { token: mallory.token, body: attach }),
      404,
      "ATTACHMENT_NOT_FOUND",
    );
    for (const kind of ["renote", "reply"]) {
      const answer = await server.request("POST", `/notes/${publicNote}/${kind}`, {
        token: mallory.token,
        body: attach,
      });
      expectError(answer, 404, "ATTACHMENT_NOT_FOUND");
    }
    for (const field of ["avatar_file_id", "header_file_id"]) {
      const answer = await server.request("PATCH", `/accounts/${mallory.name}`, {
        token: mallory.token,
        body: { [field]: file.id },
      });
      expectError(answer, 404, "FILE_NOT_FOUND");
    }
    expect((await server.request("GET", "/drive", { token: mallory.token })).body).toEqual([]);
    const kept = await server.request("GET", `/drive/${file.id}`, { token: alice.token });
    expect(kept.status).toBe(200);
    expect(kept.body.nsfw).toBe(false);
  });

  it("notifications: marking another account's notification read is 404 NOTIFICATION_NOT_FOUND, and it stays unread", async () => {
    expectError(
      await server.request("POST", `/notifications/${aliceNotification}/read`, { token: mallory.token, body: {} }),
      404,
      "NOTIFICATION_NOT_FOUND",
    );
    const markRead = `mutation ($id: ID!) { r: markRead(id: $id) ${RESULT} }`;
    expect(outcome((await gql(markRead, { id: aliceNotification }, mallory.token)).r)).toBe("NOTIFICATION_NOT_FOUND");
    expect((await server.request("GET", "/notifications", { token: mallory.token })).body.notifications).toEqual([]);
    const unread = await server.request("GET", "/notifications", { token: alice.token });
    expect(unread.body.notifications.map((n: { id: string }) => n.id)).toContain(aliceNotification);
  });

  it("GraphQL: the same operations by id answer the same codes, and change nothing", async () => {
    const cases: [string, string, Record<string, unknown>][] = [
      [`query ($id: ID!) { r: note(id: $id) ${RESULT} }`, "NOTE_NOT_FOUND", { id: followersNote }],
      [`query ($id: ID!) { r: note(id: $id) ${RESULT} }`, "NOTE_NOT_FOUND", { id: directNote }],
      [`mutation ($id: ID!) { r: deleteNote(noteId: $id) ${RESULT} }`, "NOTE_NOT_FOUND", { id: followersNote }],
      [`mutation ($id: ID!) { r: deleteNote(noteId: $id) ${RESULT} }`, "NO_PERMISSION", { id: publicNote }],
      [`mutation ($id: ID!) { r: react(noteId: $id, emoji: "👍") ${RESULT} }`, "NOTE_NOT_FOUND", { id: directNote }],
      [`mutation ($id: ID!) { r: bookmark(noteId: $id) ${RESULT} }`, "NOTE_NOT_FOUND", { id: directNote }],
      [`query ($id: ID!) { r: list(id: $id) ${RESULT} }`, "LIST_NOTFOUND", { id: privateList }],
      [`query ($id: ID!) { r: listTimeline(listId: $id) ${RESULT} }`, "LIST_NOTFOUND", { id: privateList }],
      [`mutation ($id: ID!) { r: updateList(id: $id, title: "pwned") ${RESULT} }`, "LIST_NOTFOUND", { id: publicList }],
      [`mutation ($id: ID!) { r: deleteList(id: $id) ${RESULT} }`, "LIST_NOTFOUND", { id: publicList }],
      [
        `mutation ($id: ID!, $who: [ID!]!) { r: assignToList(id: $id, accountIds: $who) ${RESULT} }`,
        "LIST_NOTFOUND",
        { id: publicList, who: [mallory.id] },
      ],
      [
        `mutation ($id: ID!, $who: [ID!]!) { r: removeFromList(id: $id, accountIds: $who) ${RESULT} }`,
        "LIST_NOTFOUND",
        { id: publicList, who: [bob.id] },
      ],
      [`query ($id: ID!) { r: driveFile(id: $id) ${RESULT} }`, "FILE_NOT_FOUND", { id: file.id }],
      [`mutation ($id: ID!) { r: updateFile(id: $id, nsfw: true) ${RESULT} }`, "FILE_NOT_FOUND", { id: file.id }],
      [`mutation ($id: ID!) { r: deleteFile(id: $id) ${RESULT} }`, "FILE_NOT_FOUND", { id: file.id }],
      [
        `mutation ($id: ID!) { r: createNote(input: { content: "x", attachmentFileIds: [$id] }) ${RESULT} }`,
        "ATTACHMENT_NOT_FOUND",
        { id: file.id },
      ],
    ];
    for (const [query, code, variables] of cases) {
      expect(outcome((await gql(query, variables, mallory.token)).r), query).toBe(code);
    }
    // The owner gets the same by id: the codes above are the rule, not a broken resolver.
    const owned: [string, Record<string, unknown>][] = [
      [`query ($id: ID!) { r: note(id: $id) ${RESULT} }`, { id: followersNote }],
      [`query ($id: ID!) { r: list(id: $id) ${RESULT} }`, { id: privateList }],
      [`query ($id: ID!) { r: driveFile(id: $id) ${RESULT} }`, { id: file.id }],
    ];
    for (const [query, variables] of owned) {
      expect((await gql(query, variables, alice.token)).r.__typename, query).not.toBe("DomainError");
    }
    const lists = await server.request("GET", `/lists/accounts/${alice.id}`, { token: alice.token });
    expect(lists.body.map((l: { title: string }) => l.title).sort()).toEqual(["open list", "secret list"]);
    expect((await server.request("GET", `/drive/${file.id}`, { token: alice.token })).body.nsfw).toBe(false);
    expect((await server.request("GET", `/notes/${followersNote}`, { token: alice.token })).status).toBe(200);
  });

  it("GraphQL never shows another account's e-mail: account, note author, list assignees", async () => {
    const query = `query ($name: String!, $note: ID!, $list: ID!) {
      account(name: $name) { ... on QueryAccountSuccess { data { email } } }
      note(id: $note) { ... on QueryNoteSuccess { data { author { email } } } }
      list(id: $list) { ... on QueryListSuccess { data { assignees { ... on AccountConnection { edges { node { email } } } } } } }
    }`;
    const data = await gql(query, { name: alice.name, note: publicNote, list: publicList }, mallory.token);
    expect(data.account.data.email).toBeNull();
    expect(data.note.data.author.email).toBeNull();
    expect(data.list.data.assignees.edges).toEqual([{ node: { email: null } }]);
    const own = await gql(query, { name: alice.name, note: publicNote, list: publicList }, alice.token);
    expect(own.account.data.email).toBe(alice.email);
  });
});

// ---------------------------------------------------------------------------------------------
// 7. Path traversal and odd ids under /files/ (also test/drive.test.ts "file serving")

describe("what a note carries of its author", () => {
  it("is the public view and the e-mail, never the passphrase hash, on every path that loads notes", async () => {
    const author = await account(server, "sec_author");
    const id = await note(author, { content: "whose hash?" });
    const ctx = { ...server.services, caller: {} };
    const loaded = [await findVisibleNote(ctx, id), ...(await timeline(ctx, "global", {}))];
    for (const n of loaded) {
      expect(Object.keys(n.author).sort()).toEqual(Object.keys(PUBLIC_ACCOUNT_SELECT).sort());
    }
  });
});

describe("path traversal and odd ids under /files/", () => {
  const CANARY = `canary-${randomBytes(8).toString("hex")}`;
  let stored: { id: string };

  beforeAll(async () => {
    const owner = await account(server, "sec_files");
    stored = await uploadFile(server, owner, await image("png", 20, 20), "stored.png");
    // Files beside and above the storage folder, which no /files/ URL may ever reach.
    fs.writeFileSync(path.join(server.dataDir, "canary.txt"), CANARY);
    fs.writeFileSync(path.join(server.services.config.storageDir, "canary.txt"), CANARY);
  });

  // Sent byte for byte over a socket: fetch and inject would normalise `..` away.
  const ODD = [
    "/files/..%2f..%2fetc%2fpasswd",
    "/files/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "/files/../../etc/passwd",
    "/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/files/%2e%2e/%2e%2e/etc/passwd",
    "/files/..%5c..%5cetc%5cpasswd",
    "/files/....//....//etc/passwd",
    "/files/%252e%252e%252fetc%252fpasswd",
    "/files/..",
    "/files/.",
    "/files/..%2fcanary.txt",
    "/files/canary.txt",
    "/files/.uploads",
    "/files/%00",
    "/files/1%00",
    "/files/1%2F2",
    "/files/-1",
    "/files/0",
    "/files/99999999999999999999999",
    "/files/18446744073709551616",
    "/files/9223372036854775808",
    "/files/1e3",
    "/files/0x10",
    "/files/%EF%BC%91%EF%BC%92%EF%BC%93",
    "/files/+1",
    "/files/%201",
    "/files/1.5",
    "/files/1%0d%0aSet-Cookie:%20a=b",
  ];
  const ODD_OF_STORED = (id: string) => [
    `/files/${id}.png`,
    `/files/${id}%00`,
    `/files/${id}%2f..%2f..%2fcanary.txt`,
    `/files/${id}/..%2f..%2fcanary.txt`,
    `/files/${id}/../../canary.txt`,
    `/files/${id}/thumbnail/../../../canary.txt`,
    `/files/-${id}`,
    `/files/${id}%20`,
    `/files/${id}e0`,
    // Leading zeros: one spelling per id, so caches and logs cannot be split by aliases.
    `/files/0${id}`,
    `/files/00${id}`,
  ];

  it(`answers ${ODD.length} odd paths and ${ODD_OF_STORED("1").length} odd forms of a real id with 404 FILE_NOT_FOUND or NOT_FOUND, never a file's bytes, never a 500`, async () => {
    for (const target of [...ODD, ...ODD_OF_STORED(stored.id)]) {
      const answer = await rawGet(target);
      const text = answer.body.toString("latin1");
      expect({ target, status: answer.status }).toEqual({ target, status: 404 });
      expect(["FILE_NOT_FOUND", "NOT_FOUND"], `${target}: ${text}`).toContain(JSON.parse(text).error);
      expect(Object.keys(JSON.parse(text)), target).toEqual(["error"]);
      expect(text, target).not.toContain(CANARY);
      expect(text, target).not.toMatch(/root:.*:0:0:/);
      expect(answer.head, target).not.toMatch(/^set-cookie/im);
    }
    // The literal fullwidth digits, as a client that does not encode would send them.
    const fullwidth = await rawExchange(
      Buffer.concat([
        Buffer.from("GET /files/"),
        Buffer.from("１２３", "utf8"),
        Buffer.from(" HTTP/1.1\r\nHost: murmur.test\r\nConnection: close\r\n\r\n"),
      ]),
    );
    expect(fullwidth.status === undefined || fullwidth.status < 500, fullwidth.head).toBe(true);
    expect(fullwidth.body.toString()).not.toContain(CANARY);
    // The server still serves, and the real file is still there.
    const real = await rawGet(`/files/${stored.id}`);
    expect(real.status).toBe(200);
    expect(real.head).toMatch(/^content-type: image\/png/im);
  });

  it("a path with malformed percent-encoding is 400 INVALID_REQUEST with the documented body, not the URL echoed back", async () => {
    for (const target of [
      "/files/%c0%ae%c0%ae%c0%afetc%c0%afpasswd",
      "/files/%E0%A4%A",
      "/files/%zz",
      "/files/%",
      "/notes/%c0%ae",
    ]) {
      const answer = await rawGet(target);
      const text = answer.body.toString("latin1");
      expect(text, target).not.toContain(CANARY);
      expect({ target, status: answer.status, body: JSON.parse(text) }).toEqual({
        target,
        status: 400,
        body: { error: "INVALID_REQUEST" },
      });
    }
  });

  it("an upload named like a path is stored under its id: nothing is written outside storage", async () => {
    const owner = await account(server, "sec_pathname");
    const before = fs.readdirSync(server.dataDir).sort();
    for (const name of ["../../../escape.png", "..\\..\\escape.png", "/etc/passwd", "%2e%2e%2fescape.png"]) {
      const uploaded = await uploadFile(server, owner, await image("png", 8, 8), name);
      const got = await server.request("GET", `/drive/${uploaded.id}`, { token: owner.token });
      expect(got.body.name).toBe(name);
      const served = await server.request("GET", `/files/${uploaded.id}`);
      expect(served.status).toBe(200);
      expect(String(served.headers["content-disposition"])).not.toMatch(/[\r\n]/);
    }
    expect(fs.readdirSync(server.dataDir).sort()).toEqual(before);
    expect(fs.existsSync(path.join(server.dataDir, "..", "escape.png"))).toBe(false);
    expect(fs.existsSync(path.join(os.tmpdir(), "escape.png"))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// 8. Stored files cannot run as a page or a script (also test/drive.test.ts "upload errors")

describe("stored files cannot run as HTML or script", () => {
  let uploader: TestAccount;
  beforeAll(async () => {
    uploader = await account(server, "sec_uploader");
  });

  async function uploadRaw(bytes: Buffer | string, name: string, type = "application/octet-stream") {
    const form = new FormData();
    form.set("name", name);
    form.set("file", new Blob([typeof bytes === "string" ? bytes : new Uint8Array(bytes)], { type }), name);
    const encoded = new Response(form);
    return server.request("POST", "/drive", {
      token: uploader.token,
      headers: { "content-type": encoded.headers.get("content-type") ?? "" },
      payload: Buffer.from(await encoded.arrayBuffer()),
    });
  }

  /** The headers that keep served bytes from running, whatever they are. */
  function expectInert(answer: Answer, what: string): void {
    expect(answer.status, what).toBe(200);
    expect([...ALLOWED_TYPES], what).toContain(answer.headers["content-type"]);
    expect(answer.headers["x-content-type-options"], what).toBe("nosniff");
    const csp = String(answer.headers["content-security-policy"]);
    expect(csp, what).toContain("default-src 'none'");
    expect(csp, what).toContain("sandbox");
    expect(String(answer.headers["content-disposition"]), what).toMatch(/^(inline|attachment); *filename/);
  }

  const SCRIPT = "<html><body><script>alert(document.cookie)</script></body></html>";
  const REFUSED: [string, Buffer | string, string][] = [
    ["HTML", `<!DOCTYPE html>${SCRIPT}`, "page.html"],
    ["HTML named .png", SCRIPT, "page.png"],
    ["SVG with script", '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "img.svg"],
    ["SVG with onload", '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>', "onload.svg"],
    [
      "XHTML",
      '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>',
      "page.xhtml",
    ],
    ["JavaScript", "alert(document.cookie);", "app.js"],
    ["JSON", '{"a":"<script>alert(1)</script>"}', "data.json"],
    ["PDF", "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n", "doc.pdf"],
    ["Flash", Buffer.concat([Buffer.from("FWS"), Buffer.from([10, 0x20, 0, 0, 0]), Buffer.alloc(32)]), "movie.swf"],
    ["ZIP", Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(64)]), "archive.zip"],
    [
      "a PNG signature then HTML",
      Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.from(SCRIPT)]),
      "fake.png",
    ],
  ];

  it(`refuses ${REFUSED.length} kinds of active or unlisted content with 400 UNSUPPORTED_FILE_TYPE`, async () => {
    for (const [what, bytes, name] of REFUSED) {
      const answer = await uploadRaw(bytes, name, "image/png");
      expect({ what, status: answer.status, body: answer.body }).toEqual({
        what,
        status: 400,
        body: { error: "UNSUPPORTED_FILE_TYPE" },
      });
    }
  });

  it("serves every accepted format, its thumbnail and its /v0 URL with nosniff, a sandboxing CSP and Content-Disposition", async () => {
    const formats: [string, Buffer][] = [
      ["a.png", await image("png", 30, 20)],
      ["a.jpg", await image("jpeg", 30, 20)],
      ["a.gif", await image("gif", 30, 20)],
      ["a.webp", await image("webp", 30, 20)],
      ["a.apng", apng()],
      ["a.wav", wav(1)],
      ["a.ogg", ogg()],
      ["a.webm", webm()],
    ];
    for (const [name, bytes] of formats) {
      const file = await uploadFile(server, uploader, bytes, name);
      expectInert(await server.request("GET", `/files/${file.id}`), name);
      expectInert(await server.request("GET", `/v0/files/${file.id}`), `${name} under /v0`);
      const range = await server.request("GET", `/files/${file.id}`, { headers: { range: "bytes=0-3" } });
      expect(range.status, name).toBe(206);
      expectInert({ ...range, status: 200 }, `${name} range`);
      if (file.thumbnail) expectInert(await server.request("GET", `/files/${file.id}/thumbnail`), `${name} thumbnail`);
    }
  });

  it("a polyglot (a real PNG or GIF followed by HTML) is served as the image with nosniff, never as HTML", async () => {
    for (const [name, base, mime] of [
      ["poly.png", await image("png", 16, 16), "image/png"],
      ["poly.gif", await image("gif", 16, 16), "image/gif"],
    ] as const) {
      const bytes = Buffer.concat([base, Buffer.from(SCRIPT)]);
      const answer = await uploadRaw(bytes, name, "text/html");
      if (answer.status === 400) {
        expect(answer.body).toEqual({ error: "UNSUPPORTED_FILE_TYPE" });
        continue;
      }
      expect(answer.status).toBe(200);
      expect(answer.body.mime).toBe(mime);
      const served = await server.request("GET", `/files/${answer.body.id}`, { headers: { accept: "text/html" } });
      expectInert(served, name);
      expect(served.headers["content-type"]).toBe(mime);
    }
  });

  it("a file name cannot inject a header or change the served type", async () => {
    for (const name of [
      'x.png"; filename="evil.html',
      "x.png\r\nSet-Cookie: stolen=1\r\nX-Evil: 1",
      "x.png\r\nSet-Cookie: stolen=1\r\nContent-Type: text/html",
      "<script>alert(1)</script>.html",
    ]) {
      const answer = await uploadRaw(await image("png", 8, 8), name);
      if (answer.status === 400) {
        expect(["INVALID_REQUEST", "INVALID_SEQUENCE"]).toContain(answer.body.error);
        continue;
      }
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const served = await server.request("GET", `/files/${answer.body.id}`);
      expectInert(served, name);
      expect(served.headers["content-type"]).toBe("image/png");
      expect(served.headers["set-cookie"]).toBeUndefined();
      const disposition = String(served.headers["content-disposition"]);
      expect(disposition).not.toMatch(/[\r\n]/);
      // One filename parameter and nothing smuggled beside it; the header carries the name's last
      // path segment, as the content-disposition package gives it.
      const parsed = contentDisposition.parse(disposition);
      expect({ type: parsed.type, parameters: parsed.parameters }).toEqual({
        type: "inline",
        parameters: { filename: path.posix.basename(name) },
      });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 9. Injection through search and every string input (also test/search.test.ts)

const INJECTIONS = [
  "' OR 1=1 --",
  "' OR '1'='1",
  '"); DROP TABLE notes; --',
  "'; DROP TABLE accounts;--",
  "' UNION SELECT id, email, passphrase_hash FROM accounts --",
  "1; SELECT pg_sleep(3) --",
  "' || (SELECT current_user) || '",
  "admin'--",
  "\\'; DELETE FROM notes; --",
  "$1 $2 ::text",
  "%",
  "_",
  "\\",
  "%_%\\%",
];

describe("injection through search and string inputs", () => {
  let ivy: TestAccount;
  let seeded: { id: string; content: string }[];
  let canary: string;
  let notesBefore: number;

  beforeAll(async () => {
    ivy = await account(server, "sec_ivy");
    seeded = [];
    for (const [i, text] of INJECTIONS.entries()) {
      const content = `inj${i} ${text}`;
      seeded.push({ id: await note(ivy, { content }), content });
    }
    // Letters only: no injection's keywords are in it, so no query may ever return it.
    canary = await note(ivy, { content: "qqqqqqqq" });
    notesBefore = await server.services.db.note.count();
  });

  const search = (query: string, token?: string) =>
    server.request("GET", `/search/notes?query=${encodeURIComponent(query)}`, { token });

  it(`${INJECTIONS.length} injection strings as search queries: 200 with literal matches only, or 400 INVALID_QUERY; never 500, never a sleep`, async () => {
    for (const query of INJECTIONS) {
      const started = performance.now();
      const answer = await search(query, ivy.token);
      const elapsed = performance.now() - started;
      expect([200, 400], `${query}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
      if (answer.status === 400) {
        expect(answer.body, query).toEqual({ error: "INVALID_QUERY" });
        expect(answer.headers["x-error-detail"], query).toEqual(expect.any(String));
      } else {
        const ids = (answer.body as { id: string }[]).map((n) => n.id);
        expect(ids, query).not.toContain(canary);
      }
      expect(elapsed, query).toBeLessThan(3000);
      // As a phrase, the whole string matches exactly the notes that hold it.
      if (!query.includes('"')) {
        const phrase = await search(`"${query}"`, ivy.token);
        expect(phrase.status, `"${query}": ${JSON.stringify(phrase.body)}`).toBe(200);
        const expected = seeded.filter((n) => n.content.toLowerCase().includes(query.toLowerCase())).map((n) => n.id);
        expect((phrase.body as { id: string }[]).map((n) => n.id).sort(), query).toEqual(expected.sort());
      }
    }
    // And through GraphQL.
    const gqlSearch = `query ($q: String!) { r: searchNotes(query: $q) ${RESULT} }`;
    for (const query of INJECTIONS) {
      expect(["NoteConnection", "INVALID_QUERY"], query).toContain(
        outcome((await gql(gqlSearch, { q: query }, ivy.token)).r),
      );
    }
  });

  it("LIKE wildcards are literal: '%' finds the note with '%', '_' the one with '_', and not the others", async () => {
    const found = async (query: string) => ((await search(query, ivy.token)).body as { id: string }[]).map((n) => n.id);
    const holding = (ch: string) =>
      seeded
        .filter((n) => n.content.includes(ch))
        .map((n) => n.id)
        .sort();
    expect((await found("%")).sort()).toEqual(holding("%"));
    expect((await found("_")).sort()).toEqual(holding("_"));
    expect((await found("\\")).sort()).toEqual(holding("\\"));
    expect(holding("%").length).toBeLessThan(seeded.length);
    // A wildcard inside a word matches only itself, not any character.
    const plain = await note(ivy, { content: "snakeXcase" });
    const under = await note(ivy, { content: "snake_case" });
    expect(await found("snake_case")).toEqual([under]);
    expect(await found("snake%case")).toEqual([]);
    expect(await found("snakeXcase")).toEqual([plain]);
  });

  it("the tables are all there afterwards, and before_id takes no SQL either", async () => {
    const { db } = server.services;
    const tables = await db.$queryRaw<{ notes: string | null; accounts: string | null }[]>`
      SELECT to_regclass('notes')::text AS notes, to_regclass('accounts')::text AS accounts`;
    expect(tables[0]).toEqual({ notes: "notes", accounts: "accounts" });
    expect(await db.note.count()).toBeGreaterThanOrEqual(notesBefore);
    for (const beforeId of ["1 OR 1=1", "1; DROP TABLE notes", "1' --"]) {
      const url = `/search/notes?query=inj&before_id=${encodeURIComponent(beforeId)}`;
      expectError(await server.request("GET", url), 400, "INVALID_REQUEST");
      expectError(
        await server.request("GET", `/timeline/global?before_id=${encodeURIComponent(beforeId)}`),
        400,
        "INVALID_REQUEST",
      );
    }
    expect((await server.request("GET", `/notes/${canary}`)).status).toBe(200);
  });

  it(`${INJECTIONS.length} injection strings are stored and returned verbatim as nickname, bio, note content, cw, list title and file name`, async () => {
    for (const text of INJECTIONS) {
      const patched = await server.request("PATCH", `/accounts/${ivy.name}`, {
        token: ivy.token,
        body: { nickname: text, bio: text },
      });
      expect(patched.status, `${text}: ${JSON.stringify(patched.body)}`).toBe(200);
      const shown = await server.request("GET", `/accounts/${ivy.name}`);
      expect({ nickname: shown.body.nickname, bio: shown.body.bio }).toEqual({ nickname: text, bio: text });

      const id = await note(ivy, { content: text, cw_comment: text });
      const got = await server.request("GET", `/notes/${id}`);
      expect({ content: got.body.content, cw: got.body.cw_comment }).toEqual({ content: text, cw: text });

      const list = await server.request("POST", "/lists", { token: ivy.token, body: { title: text } });
      expect(list.status, text).toBe(200);
      expect((await server.request("GET", `/lists/${list.body.id}`, { token: ivy.token })).body.title).toBe(text);

      const file = await uploadFile(server, ivy, await image("png", 8, 8), text);
      expect((await server.request("GET", `/drive/${file.id}`, { token: ivy.token })).body.name).toBe(text);
    }
  });

  it(`${INJECTIONS.length} injection strings in every other string input: the documented error, never a 500, never a login`, async () => {
    const target = await note(ivy, { content: "react to me" });
    const list = (await server.request("POST", "/lists", { token: ivy.token, body: { title: "inj list" } })).body.id;
    await register(server, "sec_unverified");
    const expectOneOf = (answer: Answer, statuses: number[], codes: string[], what: string) => {
      expect(statuses, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`).toContain(answer.status);
      expect(codes, `${what}: ${JSON.stringify(answer.body)}`).toContain(answer.body.error);
      expect(Object.keys(answer.body), what).toEqual(["error"]);
    };
    for (const text of INJECTIONS) {
      const enc = encodeURIComponent(text);
      const registration = { name: text, email: `${enc}@example.com`, passphrase: PASSPHRASE, captcha_token: "ok" };
      expectOneOf(
        await server.request("POST", "/accounts", { body: registration }),
        [400],
        ["INVALID_ACCOUNT_NAME", "INVALID_EMAIL", "INVALID_REQUEST"],
        `register ${text}`,
      );
      for (const body of [
        { name: text, passphrase: text, captcha_token: "ok" },
        { name: `${ivy.name}${text}`, passphrase: PASSPHRASE, captcha_token: "ok" },
        { name: ivy.name, passphrase: `${PASSPHRASE}${text}`, captcha_token: "ok" },
      ]) {
        expectOneOf(
          await server.request("POST", "/login", { body }),
          [400],
          ["FAILED_TO_LOGIN", "INVALID_REQUEST"],
          `login ${JSON.stringify(body)}`,
        );
      }
      expectOneOf(
        await server.request("GET", `/accounts/${enc}`),
        [400, 404],
        ["ACCOUNT_NOT_FOUND", "INVALID_REQUEST"],
        `account ${text}`,
      );
      expectOneOf(
        await server.request("GET", `/timeline/accounts/${enc}`),
        [404],
        ["ACCOUNT_NOT_FOUND"],
        `timeline ${text}`,
      );
      expectError(await server.request("POST", "/refresh", { body: { refresh_token: text } }), 400, "INVALID_TOKEN");
      expectError(
        await server.request("POST", "/accounts/sec_unverified/verify_email", {
          body: { token: text },
        }),
        400,
        "INVALID_TOKEN",
      );
      expectError(
        await server.request("POST", `/notes/${target}/reaction`, { token: ivy.token, body: { emoji: text } }),
        400,
        "EMOJI_NOT_FOUND",
      );
      expectError(
        await server.request("POST", "/notes", { token: ivy.token, body: { content: "x", visibility: text } }),
        400,
        "INVALID_VISIBILITY",
      );
      expectError(
        await server.request("POST", "/notes", {
          token: ivy.token,
          body: { content: "x", visibility: "direct", send_to: text },
        }),
        404,
        "ACCOUNT_NOT_FOUND",
      );
      expectError(
        await server.request("POST", `/lists/${list}`, { token: ivy.token, body: { account_id: [text] } }),
        404,
        "ACCOUNT_NOT_FOUND",
      );
      expectError(
        await server.request("POST", "/notes", {
          token: ivy.token,
          body: { content: "x", attachment_file_ids: [text] },
        }),
        404,
        "ATTACHMENT_NOT_FOUND",
      );
      expectError(
        await server.request("GET", `/notifications?after=${enc}`, { token: ivy.token }),
        400,
        "INVALID_REQUEST",
      );
      for (const path of [`/notes/${enc}`, `/drive/${enc}`, `/lists/${enc}`, `/files/${enc}`]) {
        const answer = await server.request("GET", path, { token: ivy.token });
        expectOneOf(answer, [404], ["NOTE_NOT_FOUND", "FILE_NOT_FOUND", "LIST_NOTFOUND", "NOT_FOUND"], path);
      }
      expectUnauthorized(
        await server.request("GET", "/timeline/home", { headers: { authorization: `Bearer ${text}` } }),
        "INVALID_TOKEN",
      );
    }
    // No registration got through with an injected name or e-mail.
    expect(await server.services.db.account.count({ where: { nameKey: { contains: "'" } } })).toBe(0);
    expect(await server.services.db.account.count({ where: { emailKey: { contains: "'" } } })).toBe(0);
  });

  it("a NUL character in a string input is refused with 400 or kept, never a 500", async () => {
    const nul = "a\u0000b";
    const list = (await server.request("POST", "/lists", { token: ivy.token, body: { title: "nul list" } })).body.id;
    const attempts: [string, string, unknown][] = [
      ["POST", "/notes", { content: nul }],
      ["POST", "/notes", { content: "x", cw_comment: nul }],
      ["POST", "/lists", { title: nul }],
      ["PATCH", `/lists/${list}`, { title: nul }],
      ["PATCH", `/accounts/${ivy.name}`, { nickname: nul }],
      ["PATCH", `/accounts/${ivy.name}`, { bio: nul }],
      ["POST", "/login", { name: nul, passphrase: `${PASSPHRASE}\u0000`, captcha_token: "ok" }],
      ["POST", "/refresh", { refresh_token: nul }],
      ["GET", `/search/notes?query=${encodeURIComponent(nul)}`, undefined],
      ["GET", `/accounts/${encodeURIComponent(nul)}`, undefined],
    ];
    const failures: string[] = [];
    for (const [method, url, body] of attempts) {
      const answer = await server.request(method, url, { token: ivy.token, body });
      if (answer.status >= 500) failures.push(`${method} ${url} ${JSON.stringify(body)} -> ${answer.status}`);
      else if (answer.status >= 400) expect(Object.keys(answer.body), url).toEqual(["error"]);
    }
    const upload = await (async () => {
      const form = new FormData();
      form.set("name", nul);
      form.set("file", new Blob([new Uint8Array(await image("png", 8, 8))]), "nul.png");
      const encoded = new Response(form);
      return server.request("POST", "/drive", {
        token: ivy.token,
        headers: { "content-type": encoded.headers.get("content-type") ?? "" },
        payload: Buffer.from(await encoded.arrayBuffer()),
      });
    })();
    if (upload.status >= 500) failures.push(`POST /drive name=${JSON.stringify(nul)} -> ${upload.status}`);
    // GraphQL: a DomainError or a success, never a top-level "Unexpected error".
    for (const [query, variables] of [
      [`query ($q: String!) { r: searchNotes(query: $q) ${RESULT} }`, { q: nul }],
      [`mutation ($c: String!) { r: createNote(input: { content: $c }) ${RESULT} }`, { c: nul }],
      [`mutation ($t: String!) { r: createList(title: $t) ${RESULT} }`, { t: nul }],
    ] as const) {
      const answer = await server.request("POST", "/graphql", { token: ivy.token, body: { query, variables } });
      if (answer.status !== 200 || answer.body.errors) {
        failures.push(
          `GraphQL ${query.split("{")[1].trim()} -> ${answer.status} ${JSON.stringify(answer.body.errors)}`,
        );
      }
    }
    expect(failures).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// 10. Oversized headers and bodies (also test/http.test.ts "bad input")

describe("oversized and malformed requests", () => {
  it("a 20 KB header is answered 431 and the connection closed; the server answers afterwards", async () => {
    const answer = await rawGet("/healthz", `X-Big: ${"a".repeat(20 * 1024)}\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.closed).toBe(true);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: "INVALID_REQUEST" });
    expect(answer.body.toString()).not.toMatch(/\bat .*\.(ts|js):\d+/);
    // Many headers of 1 KB that add up past the limit, and a 20 KB URL: the same.
    const many = Array.from({ length: 20 }, (_, i) => `X-H${i}: ${"b".repeat(1024)}\r\n`).join("");
    expect((await rawGet("/healthz", many)).status).toBe(431);
    expect([414, 431]).toContain((await rawGet(`/accounts/${"c".repeat(20 * 1024)}`)).status);
    const after = await rawGet("/healthz");
    expect(after.status).toBe(200);
  });

  it("a JSON body over 1 MiB is 413 PAYLOAD_TOO_LARGE, on REST and GraphQL", async () => {
    const big = "x".repeat(1024 * 1024 + 1);
    expectError(
      await server.request("POST", "/login", { body: { name: big, passphrase: "p", captcha_token: "ok" } }),
      413,
      "PAYLOAD_TOO_LARGE",
    );
    expectError(
      await server.request("POST", "/graphql", { body: { query: `{ __typename }`, variables: { big } } }),
      413,
      "PAYLOAD_TOO_LARGE",
    );
  });

  it("a declared Content-Length of 10 GiB is refused with 413 at once, without waiting for the body", async () => {
    const answer = await rawExchange(
      "POST /login HTTP/1.1\r\nHost: murmur.test\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${10 * 1024 ** 3}\r\nConnection: close\r\n\r\n{"name":`,
      { waitMs: 8000 },
    );
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: "PAYLOAD_TOO_LARGE" });
    expect(answer.elapsedMs).toBeLessThan(8000);
  });

  it("a chunked JSON body that grows past 1 MiB is 413 PAYLOAD_TOO_LARGE", async () => {
    const chunk = "y".repeat(64 * 1024);
    const chunks = Array.from({ length: 18 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join("");
    const answer = await rawExchange(
      "POST /login HTTP/1.1\r\nHost: murmur.test\r\nContent-Type: application/json\r\n" +
        `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks}0\r\n\r\n`,
      { waitMs: 8000 },
    );
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body.toString())).toEqual({ error: "PAYLOAD_TOO_LARGE" });
  });

  it("request smuggling: Content-Length with Transfer-Encoding, or two Content-Lengths, is refused with 400 and closed", async () => {
    for (const framing of [
      "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
      "Content-Length: 4\r\nContent-Length: 40\r\n",
      "Transfer-Encoding: chunked, identity\r\n",
    ]) {
      const answer = await rawExchange(
        `POST /login HTTP/1.1\r\nHost: murmur.test\r\nContent-Type: application/json\r\n${framing}\r\n` +
          "0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: murmur.test\r\n\r\n",
      );
      expect(answer.status, framing).toBe(400);
      expect(answer.closed, framing).toBe(true);
      // The smuggled second request was never answered.
      expect(answer.body.toString(), framing).not.toContain('"status":"ok"');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 11. Slow clients: REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS

describe("slow clients", () => {
  let slow: TestServer;
  let slowPort: number;
  beforeAll(async () => {
    slow = await startTestServer({ REQUEST_TIMEOUT_MS: "1000", HEADERS_TIMEOUT_MS: "500" });
    await slow.app.listen({ port: 0, host: "127.0.0.1" });
    slowPort = (slow.app.server.address() as AddressInfo).port;
  });
  afterAll(() => slow?.close());

  /** The connection was cut within `limitMs`: closed, or answered 408. */
  function expectCut(answer: RawResponse, what: string, limitMs = 10_000): void {
    expect(answer.closed, `${what}: still open after ${Math.round(answer.elapsedMs)} ms`).toBe(true);
    expect(answer.elapsedMs, what).toBeLessThan(limitMs);
    if (answer.status !== undefined) {
      expect(answer.status, `${what}: ${answer.head}`).toBe(408);
      expect(JSON.parse(answer.body.toString())).toEqual({ error: "INVALID_REQUEST" });
    }
  }

  it("headers sent one byte every 200 ms, never finished: cut within a few seconds", async () => {
    const request = "GET /healthz HTTP/1.1\r\nHost: murmur.test\r\nX-Slow: ";
    const drip = { text: "abcdefgh", everyMs: 200 };
    const answer = await rawExchange(request, { to: slowPort, drip, waitMs: 12_000 });
    expectCut(answer, "slow headers");
    // The control: the main server, on the default 10 s headers timeout, still waits at 2 s.
    const patient = await rawExchange(request, { drip, waitMs: 2000 });
    expect(patient.closed).toBe(false);
  }, 20_000);

  it("full headers with Content-Length: 1000 and only 10 body bytes: cut within a few seconds", async () => {
    const answer = await rawExchange(
      "POST /login HTTP/1.1\r\nHost: murmur.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" +
        '{"name":"a',
      { to: slowPort, waitMs: 12_000 },
    );
    expectCut(answer, "short body");
  }, 20_000);

  it("a body dripped one byte every 200 ms: cut within a few seconds", async () => {
    const answer = await rawExchange(
      "POST /login HTTP/1.1\r\nHost: murmur.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
      { to: slowPort, drip: { text: "aaaaaaaa", everyMs: 200 }, waitMs: 12_000 },
    );
    expectCut(answer, "dripped body");
  }, 20_000);

  it("a prompt client is served as usual by the same server", async () => {
    const answer = await rawExchange("GET /healthz HTTP/1.1\r\nHost: murmur.test\r\nConnection: close\r\n\r\n", {
      to: slowPort,
    });
    expect(answer.status).toBe(200);
  });
});
