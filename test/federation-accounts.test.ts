// Remote accounts (docs/federation.md#remote-accounts): two Murmur servers on different hosts
// (127.0.0.2 and 127.0.0.3); server A takes `@bob@<B>` wherever a name is taken, stores bob under an
// id of its own and answers him as a local account, with B's host in his name. He cannot log in on
// A; his profile is fetched again once a day old, and on his Update; his Delete removes him.
import { signRequest } from "@fedify/fedify";
import { Delete, Update } from "@fedify/fedify/vocab";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMurmurFederation } from "../src/federation/federation.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { account, PASSPHRASE } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

/** Delivery and the handling of what arrives are asynchronous: a bounded wait. */
const WAIT = { timeout: 10_000, interval: 50 };

let a: TestServer;
let b: ListeningServer;
let off: TestServer;
let bUrl: string;
let bHost: string;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;

beforeAll(async () => {
  b = await listening("127.0.0.2");
  bUrl = b.url;
  bHost = new URL(bUrl).host;
  ({ bob, alice: carol } = await cast(b, { bob: "bob", alice: "carol" }));
  const profile = await b.request("PATCH", `/accounts/${bob.name}`, {
    token: bob.token,
    body: { nickname: "Bob B.", bio: "Line one & <two>\nline three" },
  });
  expect(profile.status).toBe(200);
  a = await listening("127.0.0.3");
  ({ alice } = await cast(a, { alice: "alice" }));
  off = await startTestServer({ FEDERATION: "false", FEDERATION_ALLOW_PRIVATE: "true" });
}, 30_000);

afterAll(async () => {
  for (const server of [a, b, off]) {
    await closeFederating(server);
  }
});

/** B's federation, to send what B does not send by itself yet, signed by its actors' keys. */
function bContext() {
  return createMurmurFederation(b.services).createContext(new Request(bUrl), b.services);
}

describe("a remote account", () => {
  it("is answered by name as a local account is, with its own host and a local id", async () => {
    const answer = await a.request("GET", `/accounts/@${bob.name}@${bHost}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({
      name: `@bob@${bHost}`,
      nickname: "Bob B.",
      bio: "Line one & <two>\nline three",
      followed_count: 0,
      following_count: 0,
    });
    const stored = await a.services.db.account.findUniqueOrThrow({ where: { id: BigInt(answer.body.id) } });
    expect(stored).toMatchObject({
      host: bHost,
      uri: `${bUrl}/accounts/${bob.id}`,
      inboxUrl: `${bUrl}/accounts/${bob.id}/inbox`,
    });
    expect(stored.sharedInboxUrl).toBe(`${bUrl}/inbox`);
    // A's own snowflake, made when A stored him: not B's id for him.
    expect(answer.body.id).not.toBe(bob.id);

    const byId = await a.request("GET", `/accounts/${answer.body.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(answer.body);
    // The name again finds the stored account, in any case.
    const again = await a.request("GET", `/accounts/@BOB@${bHost}`);
    expect(again.body.id).toBe(answer.body.id);
  });

  it("has its host in GraphQL, null for a local account", async () => {
    const data = await gql(
      a,
      `query ($remote: String!) {
        remote: account(name: $remote) { ... on QueryAccountSuccess { data { name host } } }
        local: account(name: "alice") { ... on QueryAccountSuccess { data { name host } } }
      }`,
      { remote: `@bob@${bHost}` },
    );
    expect(data.remote.data).toEqual({ name: `@bob@${bHost}`, host: bHost });
    expect(data.local.data).toEqual({ name: `@alice@${new URL(a.services.config.publicUrl).host}`, host: null });
  });

  it("cannot log in, by its name, its qualified name or its id", async () => {
    const { id } = (await a.request("GET", `/accounts/@bob@${bHost}`)).body;
    for (const name of ["bob", `@bob@${bHost}`, id]) {
      const answer = await a.request("POST", "/login", { body: { name, passphrase: PASSPHRASE, captcha_token: "ok" } });
      expect(answer.body, name).toEqual({ error: "FAILED_TO_LOGIN" });
    }
    // Nor is anything mailed to it: it has no e-mail here.
    const resend = await a.request("POST", `/accounts/${id}/resend_verify_email`, { body: { captcha_token: "ok" } });
    expect(resend.body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
  });

  it("that resolves to nothing is ACCOUNT_NOT_FOUND, and so is every remote name with FEDERATION off", async () => {
    for (const name of [`@nobody@${bHost}`, "@bob@127.0.0.9:1", "@bob@a b"]) {
      const answer = await a.request("GET", `/accounts/${encodeURIComponent(name)}`);
      expect(answer.status, name).toBe(404);
      expect(answer.body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
    }
    const answer = await off.request("GET", `/accounts/@bob@${bHost}`);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
  });

  it("is fetched again on use once a day old, not before", async () => {
    await a.request("GET", `/accounts/@carol@${bHost}`);
    await b.request("PATCH", "/accounts/carol", { token: carol.token, body: { nickname: "Carol 2" } });
    expect((await a.request("GET", `/accounts/@carol@${bHost}`)).body.nickname).toBe("carol");
    await a.services.db.account.updateMany({
      where: { host: bHost, name: "carol" },
      data: { fetchedAt: new Date(Date.now() - 25 * 60 * 60 * 1000) },
    });
    expect((await a.request("GET", `/accounts/@carol@${bHost}`)).body.nickname).toBe("Carol 2");
  });

  it("takes its Update, and its Delete removes it", async () => {
    const { id } = (await a.request("GET", `/accounts/@bob@${bHost}`)).body;
    await b.request("PATCH", "/accounts/bob", { token: bob.token, body: { nickname: "Robert" } });
    const ctx = bContext();
    const actor = await ctx.getActor(bob.id);
    const aliceOnA = {
      id: new URL(`${a.services.config.publicUrl}/accounts/${alice.id}`),
      inboxId: new URL(`${a.services.config.publicUrl}/accounts/${alice.id}/inbox`),
    };
    await ctx.sendActivity(
      { identifier: bob.id },
      aliceOnA,
      new Update({ id: new URL(`${bUrl}/updates/1`), actor: ctx.getActorUri(bob.id), object: actor }),
      { immediate: true },
    );
    // Activities received are handled off the inbox's answer, through the queue.
    await expect.poll(async () => (await a.request("GET", `/accounts/${id}`)).body.nickname, WAIT).toBe("Robert");

    await ctx.sendActivity(
      { identifier: bob.id },
      aliceOnA,
      new Delete({ id: new URL(`${bUrl}/deletes/1`), actor: ctx.getActorUri(bob.id), object: ctx.getActorUri(bob.id) }),
      { immediate: true },
    );
    await expect
      .poll(async () => (await a.request("GET", `/accounts/${id}`)).body, WAIT)
      .toEqual({ error: "ACCOUNT_NOT_FOUND" });
    expect((await a.request("GET", `/accounts/@bob@${bHost}`)).body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
    const stored = await a.services.db.account.findUniqueOrThrow({ where: { id: BigInt(id) } });
    expect(stored.deletedAt).not.toBeNull();
  });
  it("deleted on its server: its Delete, unverifiable once its key is gone with it, is taken when the actor is seen gone", async () => {
    const dora = await account(b, "dora");
    const { id } = (await a.request("GET", `/accounts/@dora@${bHost}`)).body;
    const deleted = await b.request("DELETE", "/accounts/dora", {
      token: dora.token,
      body: { passphrase: PASSPHRASE },
    });
    expect(deleted.status).toBe(204);
    // B keeps a deleted account's keys for its Delete; its actor, and so its key, is 410 Gone.
    const ctx = bContext();
    const inbox = `${a.services.config.publicUrl}/inbox`;
    await ctx.sendActivity(
      { identifier: dora.id },
      { id: new URL(`${a.services.config.publicUrl}/accounts/${alice.id}`), inboxId: new URL(inbox) },
      new Delete({
        id: new URL(`${bUrl}/deletes/2`),
        actor: ctx.getActorUri(dora.id),
        object: ctx.getActorUri(dora.id),
      }),
      { immediate: true },
    );
    expect((await a.request("GET", `/accounts/${id}`)).body).toEqual({ error: "ACCOUNT_NOT_FOUND" });
  });
  it("alive on its server: a Delete whose key cannot be fetched is refused (401) and changes nothing", async () => {
    const { id } = (await a.request("GET", `/accounts/@carol@${bHost}`)).body;
    const keys = await rsaKeyPair();
    const carolUri = `${bUrl}/accounts/${carol.id}`;
    const body = JSON.stringify({
      "@context": "https://www.w3.org/ns/activitystreams",
      id: `${bUrl}/deletes/forged`,
      type: "Delete",
      actor: carolUri,
      object: carolUri,
    });
    const signed = await signRequest(
      new Request(`${a.services.config.publicUrl}/inbox`, {
        method: "POST",
        headers: { "content-type": "application/activity+json" },
        body,
      }),
      keys.privateKey,
      new URL(`${bUrl}/no-such-key#main-key`),
      { spec: "draft-cavage-http-signatures-12" },
    );
    const headers: Record<string, string> = {};
    signed.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const answer = await a.request("POST", "/inbox", { headers, payload: body });
    expect(answer.status).toBe(401);
    expect((await a.request("GET", `/accounts/${id}`)).status).toBe(200);
  });
});
