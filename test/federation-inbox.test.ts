// Inbox POSTs through Murmur's Fastify adapter (docs/federation.md#built-so-far): a body signed by
// a remote actor (draft-cavage, with its Digest) is accepted; the same signature over other bytes,
// or no signature, is 401. A peer is played by a small HTTP server on 127.0.0.1 serving its actor
// and key (FEDERATION_ALLOW_PRIVATE lets Murmur fetch it).
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { signRequest } from "@fedify/fedify";
import { Follow } from "@fedify/fedify/vocab";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cast } from "./support/cast.ts";
import { closeFederating } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { rsaKeyPair } from "./support/keys.ts";
import { PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";

const AP = "application/activity+json";
/** The only answers of this file's server not in openapi.json (docs/federation.md). */
const FEDERATION_ANSWER = /^POST \/(inbox|accounts\/)/;

let server: TestServer;
let alice: TestAccount;
let peer: http.Server;
let peerUrl: string;
let keys: CryptoKeyPair;

beforeAll(async () => {
  keys = await rsaKeyPair();
  const pem = KeyObject.from(keys.publicKey).export({ type: "spki", format: "pem" }).toString();
  peer = http.createServer((request, response) => {
    if (request.url !== "/actor") return response.writeHead(404).end();
    response.writeHead(200, { "content-type": AP }).end(
      JSON.stringify({
        "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
        id: `${peerUrl}/actor`,
        type: "Person",
        preferredUsername: "mallory",
        inbox: `${peerUrl}/inbox`,
        publicKey: { id: `${peerUrl}/actor#main-key`, owner: `${peerUrl}/actor`, publicKeyPem: pem },
      }),
    );
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  server = await startTestServer({ FEDERATION_ALLOW_PRIVATE: "true" });
  ({ alice } = await cast(server, { alice: "alice" }));
});

afterAll(async () => {
  peer.close();
  await closeFederating(server, FEDERATION_ANSWER);
});

/** A Follow of alice by the peer's actor, signed by the peer's key over `signed` and sent with `sent`. */
async function post(path: string, signed: string, sent = signed) {
  const request = await signRequest(
    new Request(`${PUBLIC_URL}${path}`, { method: "POST", headers: { "content-type": AP }, body: signed }),
    keys.privateKey,
    new URL(`${peerUrl}/actor#main-key`),
    { spec: "draft-cavage-http-signatures-12" },
  );
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return server.request("POST", path, { headers, payload: sent });
}

/** Pretty-printed: a body parsed and written again would no longer match its Digest. */
const follow = (id: string) =>
  JSON.stringify(
    {
      "@context": "https://www.w3.org/ns/activitystreams",
      id: `${peerUrl}/follows/${id}`,
      type: "Follow",
      actor: `${peerUrl}/actor`,
      object: `${PUBLIC_URL}/accounts/${alice.id}`,
    },
    null,
    2,
  );

describe("inbox POSTs", () => {
  it("accept a body signed by its actor, on the shared and the personal inbox", async () => {
    for (const path of ["/inbox", `/accounts/${alice.id}/inbox`]) {
      const answer = await post(path, follow(path.length.toString()));
      expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(202);
    }
    // The peer's key, fetched once, is kept in PostgreSQL (src/federation/kv-store.ts), where every
    // instance of a fleet finds it.
    const cached = await server.services.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM federation_kv WHERE value::text LIKE ${`%${peerUrl}/actor#main-key%`}`;
    expect(cached[0].n).toBeGreaterThan(0);
  });

  it("parse the activity once before answering its POST (src/federation/parsed-activities.ts)", async () => {
    // Fedify parses it to check its proofs and again to route it; the queue's parse, of the object
    // read back from the queue, is another object's.
    const parses = vi.spyOn(Follow as unknown as Record<string, (json: unknown) => unknown>, "__fromJsonLd__Follow__");
    try {
      const answer = await post("/inbox", follow("parsed-once"));
      expect(answer.status).toBe(202);
      const byObject = new Map<unknown, number>();
      for (const [json] of parses.mock.calls) byObject.set(json, (byObject.get(json) ?? 0) + 1);
      expect([...byObject.values()][0]).toBe(1);
      expect(Math.max(...byObject.values())).toBe(1);
    } finally {
      parses.mockRestore();
    }
  });

  it("refuse the signature over other bytes than the body's (its Digest), with 401", async () => {
    const answer = await post("/inbox", follow("a"), follow("b"));
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ error: "UNAUTHORIZED" });
  });
});
