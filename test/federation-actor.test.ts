// A local account's Person (src/federation/actor.ts, docs/federation.md#actors) draws its profile
// from the account's wire fields (src/projection/account.ts): the values REST answers, so a
// change of one changes the Person too.
import { CryptographicKey, Multikey, type Person } from "@fedify/fedify/vocab";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personOf } from "../src/federation/actor.ts";
import type { Account } from "../src/generated/prisma/client.ts";
import { ACCOUNT } from "../src/projection/account.ts";
import type { Viewer } from "../src/projection/field.ts";
import { cast } from "./support/cast.ts";
import { closeFederating } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { HOST, PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";

const AP = "application/activity+json";
/** The only answers of this file's server not in openapi.json (docs/federation.md). */
const FEDERATION_ANSWER = /^GET \/accounts\//;
const CONFIG = { publicUrl: PUBLIC_URL, localHost: HOST };
const VIEWER: Viewer = { viewerId: undefined, ...CONFIG };

/** The links and keys a Person is given beside its account (what Fedify's context names). */
function links(id: bigint) {
  const actor = new URL(`${PUBLIC_URL}/accounts/${id}`);
  return {
    id: actor,
    inbox: new URL(`${actor}/inbox`),
    outbox: new URL(`${actor}/outbox`),
    followers: new URL(`${actor}/followers`),
    following: new URL(`${actor}/following`),
    sharedInbox: new URL(`${PUBLIC_URL}/inbox`),
    publicKey: new CryptographicKey({ id: new URL(`${actor}#main-key`), owner: actor }),
    assertionMethods: [new Multikey({ id: new URL(`${actor}#key-2`), controller: actor })],
  };
}

async function json(person: Person) {
  return (await person.toJsonLd({ format: "compact" })) as Record<string, unknown>;
}

describe("personOf", () => {
  const row = {
    id: 42n,
    name: "alice",
    host: null,
    nickname: "Alice <A>",
    bio: 'Hello & "welcome"\nsecond line',
    avatarFileId: 7n,
    avatarUrl: null,
    headerFileId: 8n,
    headerUrl: null,
    locked: true,
    createdAt: new Date("2026-01-02T03:04:05.678Z"),
  } satisfies Partial<Account>;

  it("carries the projection's values of the account", async () => {
    const person = await json(personOf(CONFIG, row, links(row.id)));
    expect(person).toMatchObject({
      type: "Person",
      id: `${PUBLIC_URL}/accounts/42`,
      preferredUsername: "alice",
      name: ACCOUNT.nickname.value(row, VIEWER),
      summary: "<p>Hello &amp; &quot;welcome&quot;<br>second line</p>",
      manuallyApprovesFollowers: ACCOUNT.locked.value(row, VIEWER),
      icon: { type: "Image", url: ACCOUNT.avatar.value(row, VIEWER) },
      image: { type: "Image", url: ACCOUNT.header.value(row, VIEWER) },
      published: ACCOUNT.createdAt.value(row, VIEWER),
      url: `${PUBLIC_URL}/accounts/alice`,
      discoverable: true,
      indexable: true,
      inbox: `${PUBLIC_URL}/accounts/42/inbox`,
      endpoints: { sharedInbox: `${PUBLIC_URL}/inbox` },
    });
    // Its handle is the projection's qualified name.
    expect(`@${person.preferredUsername}@${HOST}`).toBe(ACCOUNT.name.value(row, VIEWER));
  });

  it("leaves out what the account has not: no bio, no images", async () => {
    const bare = { ...row, bio: "", avatarFileId: null, headerFileId: null };
    const person = await json(personOf(CONFIG, bare, links(row.id)));
    expect(person).not.toHaveProperty("summary");
    expect(person).not.toHaveProperty("icon");
    expect(person).not.toHaveProperty("image");
  });
});

describe("an account's Person, served", () => {
  let server: TestServer;
  let alice: TestAccount;

  beforeAll(async () => {
    server = await startTestServer();
    ({ alice } = await cast(server, { alice: "alice" }));
  });

  afterAll(async () => {
    await closeFederating(server, FEDERATION_ANSWER);
  });

  it("follows a change of the account's profile, as REST answers it", async () => {
    const changed = await server.request("PATCH", "/accounts/alice", {
      token: alice.token,
      body: { nickname: "Alice B.", bio: "one\ntwo", locked: true },
    });
    expect(changed.status).toBe(200);
    const view = (await server.request("GET", "/accounts/alice")).body;
    // What the public view leaves out, as the projection draws it from the row.
    const row = await server.services.db.account.findUniqueOrThrow({ where: { id: BigInt(alice.id) } });
    const actor = await server.request("GET", `/accounts/${alice.id}`, { headers: { accept: AP } });
    expect(actor.status).toBe(200);
    const person = JSON.parse(actor.body);
    expect(person).toMatchObject({
      name: view.nickname,
      summary: "<p>one<br>two</p>",
      manuallyApprovesFollowers: ACCOUNT.locked.value(row, VIEWER),
      url: `${PUBLIC_URL}/accounts/alice`,
    });
    expect(view).toMatchObject({ nickname: "Alice B.", bio: "one\ntwo" });
    expect(row.locked).toBe(true);
    // The same instant (xsd:dateTime drops the trailing zeros of its fraction).
    expect(new Date(person.published).toISOString()).toBe(ACCOUNT.createdAt.value(row, VIEWER));
    expect(person).not.toHaveProperty("icon");
    expect(view.avatar).toBe("");
  });
});
