// Federation's discovery and actors (docs/federation.md#discovery, #actors): WebFinger both ways,
// NodeInfo 2.1, a Person per account with its keys, 404 for unknown accounts and 410 for deleted
// ones; and every REST route answering a REST client exactly as with federation off.
import { Person } from "@fedify/fedify/vocab";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating } from "./support/federation.ts";
import { PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import {
  freshDatabase,
  HOST,
  PUBLIC_URL,
  type RequestOptions,
  startTestServer,
  type TestServer,
} from "./support/server.ts";

const AP = "application/activity+json";
const LD = 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"';

/** The only answers of this file's server not in openapi.json (docs/federation.md). */
const FEDERATION_ANSWER = /^(GET|POST) \/(\.well-known\/|nodeinfo\/|inbox|accounts\/)/;

let fed: TestServer;
let rest: TestServer;
let off: TestServer;
let alice: TestAccount;
let bob: TestAccount;
let noteId: string;

beforeAll(async () => {
  const url = await freshDatabase();
  fed = await startTestServer({}, url);
  rest = await startTestServer({}, url);
  off = await startTestServer({ FEDERATION: "false" }, url);
  ({ alice, follower: bob } = await cast(fed, { alice: "alice", follower: "bob" }));
  const note = await fed.request("POST", "/notes", { token: alice.token, body: { content: "hello" } });
  expect(note.status).toBe(201);
  noteId = note.body.id;
});

afterAll(async () => {
  // The server without federation is held to openapi.json whole; the federated ones for everything
  // but federation's own answers (the sweep below holds their REST answers equal to its).
  await off.close();
  for (const server of [fed, rest]) {
    await closeFederating(server, FEDERATION_ANSWER);
  }
});

const get = (server: TestServer, path: string, accept?: string) =>
  server.request("GET", path, accept ? { headers: { accept } } : {});

describe("WebFinger", () => {
  it("finds an account by acct: and its actor by URL, round trip", async () => {
    const finger = await get(fed, `/.well-known/webfinger?resource=acct:alice@${HOST}`);
    expect(finger.status).toBe(200);
    expect(finger.headers["content-type"]).toMatch(/^application\/jrd\+json/);
    const jrd = JSON.parse(finger.body);
    expect(jrd.subject).toBe(`acct:alice@${HOST}`);
    const self = jrd.links.find((link: { rel: string }) => link.rel === "self");
    expect(self.type).toBe(AP);
    expect(self.href).toBe(`${PUBLIC_URL}/accounts/${alice.id}`);

    const actor = await get(fed, new URL(self.href).pathname, AP);
    expect(actor.status).toBe(200);
    const person = JSON.parse(actor.body);
    expect(person.id).toBe(self.href);
    expect(person.preferredUsername).toBe("alice");

    const back = await get(fed, `/.well-known/webfinger?resource=${encodeURIComponent(self.href)}`);
    expect(back.status).toBe(200);
    const byUrl = JSON.parse(back.body);
    expect(byUrl.aliases).toContain(`acct:alice@${HOST}`);
    expect(byUrl.links.find((link: { rel: string }) => link.rel === "self").href).toBe(self.href);
  });

  it("answers an unknown account with 404", async () => {
    const finger = await get(fed, `/.well-known/webfinger?resource=acct:nobody@${HOST}`);
    expect(finger.status).toBe(404);
  });
});

describe("NodeInfo", () => {
  it("links NodeInfo 2.1, which names murmur, ActivityPub and the counts", async () => {
    const wellKnown = await get(fed, "/.well-known/nodeinfo");
    expect(wellKnown.status).toBe(200);
    const link = JSON.parse(wellKnown.body).links.find((l: { rel: string }) => l.rel.endsWith("/ns/schema/2.1"));
    expect(link.href).toBe(`${PUBLIC_URL}/nodeinfo/2.1`);
    const info = await get(fed, "/nodeinfo/2.1");
    expect(info.status).toBe(200);
    const body = typeof info.body === "string" ? JSON.parse(info.body) : info.body;
    expect(body.version).toBe("2.1");
    expect(body.software.name).toBe("murmur");
    expect(body.protocols).toEqual(["activitypub"]);
    expect(body.openRegistrations).toBe(true);
    expect(body.usage.users.total).toBe(await fed.services.db.account.count({ where: { deletedAt: null } }));
    expect(body.usage.localPosts).toBeGreaterThanOrEqual(1);
  });
});

describe("actors", () => {
  it("is a Person with its profile, endpoints, an RSA publicKey and an Ed25519 assertionMethod", async () => {
    for (const accept of [AP, LD]) {
      const answer = await get(fed, `/accounts/${alice.id}`, accept);
      expect(answer.status, accept).toBe(200);
      expect(answer.headers["content-type"]).toMatch(/^application\/(activity|ld)\+json/);
      const json = JSON.parse(answer.body);
      expect(json).toMatchObject({
        type: "Person",
        id: `${PUBLIC_URL}/accounts/${alice.id}`,
        preferredUsername: "alice",
        name: "alice",
        manuallyApprovesFollowers: false,
        inbox: `${PUBLIC_URL}/accounts/${alice.id}/inbox`,
        outbox: `${PUBLIC_URL}/accounts/${alice.id}/outbox`,
        followers: `${PUBLIC_URL}/accounts/${alice.id}/followers`,
        following: `${PUBLIC_URL}/accounts/${alice.id}/following`,
        endpoints: { sharedInbox: `${PUBLIC_URL}/inbox` },
      });
      // Read back as a peer reads it, with Fedify's vocabulary.
      const person = await Person.fromJsonLd(json);
      const key = await person.getPublicKey();
      expect(key?.ownerId?.href).toBe(json.id);
      expect(key?.publicKey?.algorithm).toMatchObject({ name: "RSASSA-PKCS1-v1_5" });
      const methods = [];
      for await (const method of person.getAssertionMethods()) methods.push(method);
      expect(methods.map((method) => method.publicKey?.algorithm.name)).toEqual(["Ed25519"]);
      expect(methods[0].controllerId?.href).toBe(json.id);
    }
  });

  it("keeps the keys made at registration in PostgreSQL, the same on every instance", async () => {
    const carol = await fed.request("POST", "/accounts", {
      body: { name: "carol", email: "carol@example.com", passphrase: PASSPHRASE, captcha_token: "ok" },
    });
    expect(carol.status).toBe(200);
    // Made after the answer, without anyone asking for the actor.
    await expect
      .poll(() => fed.services.db.actorKey.count({ where: { owner: carol.body.id } }), { timeout: 15_000 })
      .toBe(2);
    const fromOne = JSON.parse((await get(fed, `/accounts/${carol.body.id}`, AP)).body);
    const fromOther = JSON.parse((await get(rest, `/accounts/${carol.body.id}`, AP)).body);
    expect(fromOne.publicKey.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(fromOther.publicKey).toEqual(fromOne.publicKey);
    expect(fromOther.assertionMethod).toEqual(fromOne.assertionMethod);
  });

  it("says a locked account approves its followers, and keeps its lists to itself", async () => {
    const locked = await fed.request("PATCH", `/accounts/${bob.name}`, { token: bob.token, body: { locked: true } });
    expect(locked.status).toBe(200);
    const person = JSON.parse((await get(fed, `/accounts/${bob.id}`, AP)).body);
    expect(person.manuallyApprovesFollowers).toBe(true);
    expect((await get(fed, `/accounts/${bob.id}/following`, AP)).status).toBe(401);
    // Alice's are public: bob follows her.
    const followers = await get(fed, `/accounts/${alice.id}/followers`, AP);
    expect(followers.status).toBe(200);
    expect(JSON.parse(followers.body)).toMatchObject({ type: "OrderedCollection", totalItems: 1 });
    const page = JSON.parse((await get(fed, `/accounts/${alice.id}/followers?cursor=`, AP)).body);
    expect(page.orderedItems).toEqual([`${PUBLIC_URL}/accounts/${bob.id}`]);
  });

  it("has an instance actor with keys", async () => {
    const actor = await get(fed, "/accounts/_instance", AP);
    expect(actor.status).toBe(200);
    const json = JSON.parse(actor.body);
    expect(json).toMatchObject({ type: "Application", id: `${PUBLIC_URL}/accounts/_instance` });
    expect(json.publicKey.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it("leaves an unknown account to REST: 404 ACCOUNT_NOT_FOUND", async () => {
    for (const path of ["/accounts/1", "/accounts/123456789012345", "/accounts/nobody"]) {
      const answer = await get(fed, path, AP);
      expect(answer.status, path).toBe(404);
      expect(answer.body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
    }
  });

  it("answers a deleted account's actor and WebFinger with 410 Gone", async () => {
    const dave = await cast(fed, { alice: "dave" });
    const deleted = await fed.request("DELETE", "/accounts/dave", {
      token: dave.alice.token,
      body: { passphrase: PASSPHRASE },
    });
    expect(deleted.status).toBe(204);
    const actor = await get(fed, `/accounts/${dave.alice.id}`, AP);
    expect(actor.status).toBe(410);
    expect(JSON.parse(actor.body)).toMatchObject({ type: "Tombstone", id: `${PUBLIC_URL}/accounts/${dave.alice.id}` });
    expect((await get(fed, `/.well-known/webfinger?resource=acct:dave@${HOST}`)).status).toBe(410);
    // REST clients see what they saw before.
    expect(await get(fed, `/accounts/${dave.alice.id}`, "application/json")).toMatchObject({
      status: 404,
      body: { error: "ACCOUNT_NOT_FOUND" },
    });
  });

  it("refuses an unsigned inbox POST with 401", async () => {
    for (const path of ["/inbox", `/accounts/${alice.id}/inbox`]) {
      const answer = await fed.request("POST", path, {
        payload: JSON.stringify({
          "@context": "https://www.w3.org/ns/activitystreams",
          id: "https://remote.example/follows/1",
          type: "Follow",
          actor: "https://remote.example/users/mallory",
          object: `${PUBLIC_URL}/accounts/${alice.id}`,
        }),
        headers: { "content-type": AP },
      });
      expect(answer.status, path).toBe(401);
      expect(answer.body).toEqual({ error: "UNAUTHORIZED" });
    }
  });

  it("answers bad input to inboxes and WebFinger with {error: INVALID_REQUEST}", async () => {
    for (const payload of ["{bad", ""]) {
      const answer = await fed.request("POST", "/inbox", { payload, headers: { "content-type": AP } });
      expect(answer.status, payload).toBe(400);
      expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    }
    for (const query of ["", "?resource=", "?resource=%ff"]) {
      const answer = await get(fed, `/.well-known/webfinger${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body).toEqual({ error: "INVALID_REQUEST" });
    }
  });
});

describe("REST clients", () => {
  it("gets every documented route's answer as with federation off, whatever a REST client accepts", async () => {
    const document = (await import("../openapi.json", { with: { type: "json" } })).default as {
      paths: Record<string, Record<string, unknown>>;
    };
    // An account path segment may be a name or an id (docs/http.md#account-paths): an actor's id is
    // a REST path too, so both are swept.
    let compared = 0;
    for (const account_name of ["alice", alice.id]) {
      const values: Record<string, string> = {
        account_name,
        account_id: alice.id,
        note_id: noteId,
        list_id: "1",
        file_id: "1",
        timeline_type: "global",
        id: "1",
        report_id: "1",
      };
      for (const [template, methods] of Object.entries(document.paths)) {
        // Live streams never end: what they answer is held by test/streaming.test.ts.
        if (template.startsWith("/streaming/")) continue;
        const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
          if (!(name in values)) throw new Error(`no value for {${name}} in ${template}`);
          return values[name];
        });
        for (const method of Object.keys(methods)) {
          const upper = method.toUpperCase();
          // By id, an ActivityPub client gets the actor and its collections (above), and at a
          // note's path the Note (test/federation-notes.test.ts).
          const activityPub = account_name === alice.id || template === "/notes/{note_id}" ? [] : [AP];
          const accepts =
            upper === "GET" ? [undefined, "*/*", "application/json", ...activityPub] : ["application/json"];
          // Reads also as alice; writes only anonymously, so that neither server changes anything.
          const tokens = upper === "GET" ? [undefined, alice.token] : [undefined];
          for (const accept of accepts) {
            for (const token of tokens) {
              const options: RequestOptions = {
                headers: accept ? { accept } : {},
                token,
                ...(upper === "GET" ? {} : { body: {} }),
              };
              const [on, before] = [await rest.request(upper, path, options), await off.request(upper, path, options)];
              const what = `${upper} ${path} accept=${accept} token=${Boolean(token)}`;
              expect(on.status, what).toBe(before.status);
              expect(on.headers["content-type"], what).toBe(before.headers["content-type"]);
              if (template !== "/metrics") expect(on.body, what).toEqual(before.body);
              compared += 1;
            }
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(200);
    // An actor's id is a REST path too: asked for as JSON, it is the REST account.
    const byId = await get(rest, `/accounts/${alice.id}`, "application/json");
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual((await get(off, `/accounts/${alice.id}`, "application/json")).body);
    expect(byId.body.name).toBe(`@alice@${HOST}`);
  });
});
