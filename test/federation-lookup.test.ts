// Remote names resolved (docs/federation.md#remote-accounts) through the guarded fetch
// (docs/federation.md#instance): two Murmur servers on different hosts (127.0.0.2 and 127.0.0.3),
// one finding the other's account by WebFinger over http (https fails first) and its actor signed
// by the instance actor; a private address refused without FEDERATION_ALLOW_PRIVATE, even behind a
// name; and a bad peer, played by a small HTTP server, that redirects forever, answers too much or
// never answers, refused in bounded time.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type Context, verifyRequest } from "@fedify/fedify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DomainError } from "../src/domain/errors.ts";
import { createMurmurFederation, type FederationData } from "../src/federation/federation.ts";
import { resolveRemoteActor } from "../src/federation/lookup.ts";
import { FETCH_LIMITS, safeFetch, UnsafeFetchError } from "../src/federation/safe-fetch.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, freePort, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";

const AP = "application/activity+json";
/** The only answers of this file's server not in openapi.json (docs/federation.md). */
const FEDERATION_ANSWER = /^GET \/(\.well-known\/|accounts\/)/;

let a: ListeningServer;
let b: ListeningServer;
let bUrl: string;
let bHost: string;
let bob: TestAccount;
/** Server A's federation, as it is mounted (FEDERATION_ALLOW_PRIVATE=true) and with it off. */
let ctx: Context<FederationData>;
let strict: Context<FederationData>;

let peer: http.Server;
let peerHost: string;
const peerGets: { url: string; signed: boolean }[] = [];
/** The peer's signed GETs, as requests its own checks would verify. */
const signedGets: Request[] = [];

/** The bad peer: WebFinger for every name, whose actor is what the name says. */
function badPeer(request: http.IncomingMessage, response: http.ServerResponse): void {
  const url = new URL(request.url ?? "/", `http://${peerHost}`);
  peerGets.push({ url: url.pathname, signed: typeof request.headers.signature === "string" });
  if (request.headers.signature) {
    const headers = Object.entries(request.headers).map(([name, value]): [string, string] => [name, String(value)]);
    signedGets.push(new Request(url, { method: request.method, headers }));
  }
  if (url.pathname === "/.well-known/webfinger") {
    const name = /^acct:([^@]+)@/.exec(url.searchParams.get("resource") ?? "")?.[1] ?? "";
    if (name === "sleepy") return; // never answers
    response.writeHead(200, { "content-type": "application/jrd+json" });
    response.end(JSON.stringify({ links: [{ rel: "self", type: AP, href: `http://${peerHost}/${name}` }] }));
    return;
  }
  const loop = /^\/loop(\d*)$/.exec(url.pathname);
  if (loop) {
    response.writeHead(302, { location: `/loop${Number(loop[1] || 0) + 1}` }).end();
    return;
  }
  if (url.pathname === "/huge") {
    // No Content-Length: the bound must hold on what arrives, not on what is announced.
    response.writeHead(200, { "content-type": AP });
    const padding = "x".repeat(64 * 1024);
    response.write(`{"@context":"https://www.w3.org/ns/activitystreams","type":"Person","summary":"`);
    for (let i = 0; i < 32; i++) response.write(padding);
    response.end(`"}`);
    return;
  }
  if (url.pathname === "/slow") return; // headers never come
  if (url.pathname === "/mallory") {
    response.writeHead(200, { "content-type": AP });
    response.end(
      JSON.stringify({
        "@context": "https://www.w3.org/ns/activitystreams",
        id: `http://${peerHost}/mallory`,
        type: "Person",
        preferredUsername: "mallory",
        inbox: `http://${peerHost}/mallory/inbox`,
      }),
    );
    return;
  }
  response.writeHead(404).end();
}

beforeAll(async () => {
  b = await listening("127.0.0.2");
  bUrl = b.url;
  bHost = new URL(bUrl).host;
  ({ bob } = await cast(b, { bob: "bob" }));
  a = await listening("127.0.0.3");
  const aUrl = a.url;
  ctx = createMurmurFederation(a.services).createContext(new URL(aUrl), a.services);
  const services = { ...a.services, config: { ...a.services.config, federationAllowPrivate: false } };
  strict = createMurmurFederation(services).createContext(new URL(aUrl), services);

  peer = http.createServer(badPeer);
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  peerHost = `127.0.0.1:${(peer.address() as AddressInfo).port}`;
}, 30_000);

afterAll(async () => {
  peer.closeAllConnections();
  peer.close();
  for (const server of [a, b]) {
    await closeFederating(server, FEDERATION_ANSWER);
  }
});

async function notFound(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(DomainError);
  expect((error as DomainError).code).toBe("ACCOUNT_NOT_FOUND");
}

describe("resolveRemoteActor", () => {
  it("finds @bob@B from A: WebFinger over http after https fails, then B's Person", async () => {
    const actor = await resolveRemoteActor(ctx, `@bob@${bHost}`);
    expect(actor.id?.href).toBe(`${bUrl}/accounts/${bob.id}`);
    expect(actor.preferredUsername).toBe("bob");
    expect(actor.inboxId?.href).toBe(`${bUrl}/accounts/${bob.id}/inbox`);
    expect(actor.endpoints?.sharedInbox?.href).toBe(`${bUrl}/inbox`);
    const key = await actor.getPublicKey();
    expect(key?.ownerId?.href).toBe(actor.id?.href);
    expect(key?.publicKey).toBeTruthy();
    const multikeys = [];
    for await (const multikey of actor.getAssertionMethods()) multikeys.push(multikey);
    expect(multikeys).toHaveLength(1);
  });

  it("signs the actor's fetch as A's instance actor", async () => {
    peerGets.length = 0;
    const actor = await resolveRemoteActor(ctx, `mallory@${peerHost}`);
    expect(actor.preferredUsername).toBe("mallory");
    expect(peerGets).toContainEqual({ url: "/mallory", signed: true });
    // Its key is the instance actor's first, and the signature holds with it.
    const get = signedGets.findLast((request) => new URL(request.url).pathname === "/mallory");
    expect(get?.headers.get("signature")).toContain(`keyId="${a.url}/accounts/_instance#main-key"`);
    const key = await verifyRequest(get as Request, { documentLoader: ctx.documentLoader });
    expect(key?.ownerId?.href).toBe(`${a.url}/accounts/_instance`);
  });

  it("is ACCOUNT_NOT_FOUND for an unknown name, a bad handle or a host nobody answers at", async () => {
    await notFound(resolveRemoteActor(ctx, `@nobody@${bHost}`));
    await notFound(resolveRemoteActor(ctx, "@bob"));
    await notFound(resolveRemoteActor(ctx, `@bob@user:pass@${bHost}`));
    await notFound(resolveRemoteActor(ctx, `@bob@127.0.0.2:${await freePort("127.0.0.2")}`));
  });

  it("refuses a private address without FEDERATION_ALLOW_PRIVATE", async () => {
    await notFound(resolveRemoteActor(strict, `@bob@${bHost}`));
    // Federation's own loaders too: B's actor over http is refused, allowed with the setting on.
    const actorUrl = `${bUrl}/accounts/${bob.id}`;
    await expect(strict.documentLoader(actorUrl)).rejects.toThrow(/not a public address/);
    await expect(ctx.documentLoader(actorUrl)).resolves.toMatchObject({ documentUrl: actorUrl });
  });

  it("refuses a name that resolves to a private address, on the address connected to", async () => {
    const url = `http://localhost:${new URL(bUrl).port}/.well-known/nodeinfo`;
    // localhost is a name, not an address: only the check at connection time can refuse it.
    await expect(
      safeFetch(new Request(url.replace("localhost", "127.0.0.2")), { allowPrivate: true }),
    ).resolves.toMatchObject({
      status: 200,
    });
    const refused = await safeFetch(new Request(url), { allowPrivate: false }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(UnsafeFetchError);
    // Refused before connecting: without the check the connection would be refused (nobody listens).
    expect((refused as Error).message).toMatch(/localhost resolves to a non-public address/);
  });
});

describe("a bad peer", () => {
  it("that redirects forever is refused after the last allowed redirect", async () => {
    peerGets.length = 0;
    await notFound(resolveRemoteActor(ctx, `loop@${peerHost}`));
    expect(peerGets.filter((get) => get.url.startsWith("/loop"))).toHaveLength(FETCH_LIMITS.maxRedirects + 1);
    await expect(ctx.documentLoader(`http://${peerHost}/loop`)).rejects.toThrow(/Too many redirections/);
  });

  it("that answers more than the bound is refused", async () => {
    await notFound(resolveRemoteActor(ctx, `huge@${peerHost}`));
    await expect(ctx.documentLoader(`http://${peerHost}/huge`)).rejects.toThrow(/more than 1048576 bytes/);
  });

  it("that never answers is refused when the time bound runs out", async () => {
    await notFound(resolveRemoteActor(ctx, `sleepy@${peerHost}`, { timeoutMs: 300 }));
    const slow = await safeFetch(new Request(`http://${peerHost}/slow`), { allowPrivate: true, timeoutMs: 300 }).catch(
      (err: unknown) => err,
    );
    expect(slow).toBeInstanceOf(UnsafeFetchError);
    expect((slow as Error).message).toMatch(/took longer than 300 ms/);
  });
});
