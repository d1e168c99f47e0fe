// Many remote servers in one process, for bench/federation-scale.ts: `servers` loopback addresses
// (127.0.1.1, 127.0.1.2, ... 250 to a /24, from 127.0.1.0 on) on one port, each a host of its own.
// Every POST to an inbox has its HTTP signature verified (Fedify's verifyRequest: draft-cavage's
// rsa-sha256 over (request-target), host, date and digest, the Digest checked against the body),
// the signer's key fetched from its actor once per key id; each POST's time, path and outcome
// are kept by activity. The first `keys` servers each serve an actor `author` with a key of its
// own, and sign Create(Note) activities from it on request (the intake bench).
//
// Started as `node --import tsx bench/federation-sim.ts <servers> <keys>`; it prints one line of
// JSON, `{"port":…,"control":…}`, once listening. Control, on 127.0.0.1:<control>:
//   GET  /stats?activity=<id>  POSTs of that activity: count, verified, failed, inboxes, first and last time (ms since the epoch)
//   GET  /totals               all POSTs: count, verified, failed, key fetches
//   POST /sign                 {inbox, count, tag}: signs `count` Create(Note)s to `inbox` from the `keys`
//                              authors in turn, for the next /intake
//   POST /intake               {connections}: POSTs what /sign prepared on `connections` connections and
//                              answers the POSTs' statuses, latencies and this process's CPU meanwhile
//                              once all are answered
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fetchKey, generateCryptoKeyPair, type KeyCache, signRequest, verifyRequest } from "@fedify/fedify";
import { CryptographicKey } from "@fedify/fedify/vocab";

import { safeDocumentLoader } from "../src/federation/document-loader.ts";

const AP = "application/activity+json";
const servers = Number(process.argv[2] ?? 1);
const keyCount = Number(process.argv[3] ?? 0);

function simAddress(index: number): string {
  return `127.0.${1 + Math.floor(index / 250)}.${1 + (index % 250)}`;
}

interface Received {
  posts: number;
  verified: number;
  failed: number;
  inboxes: Set<string>;
  first: number;
  last: number;
}

const byActivity = new Map<string, Received>();
const totals = { posts: 0, verified: 0, failed: 0, keyFetches: 0 };
const loader = safeDocumentLoader({ allowPrivate: true, userAgent: "murmur-bench-sim" });
/** Each signer's key, fetched once from its actor (the first POST of a key asks; the rest wait for it). */
const fetchedKeys = new Map<string, Promise<CryptographicKey | null>>();

function keyOf(keyId: string): Promise<CryptographicKey | null> {
  let key = fetchedKeys.get(keyId);
  if (!key) {
    totals.keyFetches++;
    key = fetchKey(new URL(keyId), CryptographicKey, { documentLoader: loader, contextLoader: loader }).then(
      (result) => result.key as CryptographicKey | null,
      () => null,
    );
    fetchedKeys.set(keyId, key);
  }
  return key;
}

/** What draft-cavage must sign for the POST to count as verified here. */
const SIGNED = ["(request-target)", "host", "date", "digest"];

async function verified(incoming: http.IncomingMessage, body: Buffer): Promise<boolean> {
  const signature = incoming.headers.signature;
  if (typeof signature !== "string") return false;
  const keyId = /keyId="([^"]+)"/.exec(signature)?.[1];
  const algorithm = /algorithm="([^"]+)"/.exec(signature)?.[1];
  const signed = /headers="([^"]+)"/.exec(signature)?.[1].split(" ") ?? [];
  if (!keyId || algorithm !== "rsa-sha256" || !SIGNED.every((h) => signed.includes(h))) return false;
  const key = await keyOf(keyId);
  if (!key) return false;
  const headers = new Headers();
  for (let i = 0; i + 1 < incoming.rawHeaders.length; i += 2)
    headers.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
  const request = new Request(`http://${incoming.headers.host}${incoming.url}`, {
    method: "POST",
    headers,
    body: new Uint8Array(body),
  });
  // The key fetched above is the only one verifyRequest is given: it fetches none itself.
  const keyCache: KeyCache = { get: async () => key, set: async () => {} };
  try {
    return (await verifyRequest(request, { documentLoader: loader, contextLoader: loader, keyCache })) !== null;
  } catch {
    return false;
  }
}

const keys: CryptoKeyPair[] = [];
const pems: string[] = [];
let port = 0;
const origin = (index: number) => `http://${simAddress(index)}:${port}`;
const actorOf = (index: number) => `${origin(index)}/users/author`;

function actorDocument(index: number) {
  const id = actorOf(index);
  return {
    "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
    id,
    type: "Person",
    preferredUsername: "author",
    inbox: `${id}/inbox`,
    followers: `${id}/followers`,
    endpoints: { sharedInbox: `${origin(index)}/inbox` },
    publicKey: { id: `${id}#main-key`, owner: id, publicKeyPem: pems[index] },
  };
}

async function answer(incoming: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const host = incoming.headers.host ?? "";
  const index = simIndex(host.split(":")[0]);
  if (incoming.method === "GET") {
    if (incoming.url === "/users/author" && index !== undefined && index < keyCount) {
      return void response.writeHead(200, { "content-type": AP }).end(JSON.stringify(actorDocument(index)));
    }
    return void response.writeHead(404).end();
  }
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const ok = await verified(incoming, body);
  let activity = "";
  try {
    activity = String(JSON.parse(body.toString()).id);
  } catch {}
  const at = Date.now();
  totals.posts++;
  totals[ok ? "verified" : "failed"]++;
  let record = byActivity.get(activity);
  if (!record) {
    record = { posts: 0, verified: 0, failed: 0, inboxes: new Set(), first: at, last: at };
    byActivity.set(activity, record);
  }
  record.posts++;
  record[ok ? "verified" : "failed"]++;
  record.inboxes.add(`${host}${incoming.url}`);
  record.last = at;
  response.writeHead(ok ? 202 : 401).end();
}

function simIndex(address: string): number | undefined {
  const match = /^127\.0\.(\d+)\.(\d+)$/.exec(address);
  if (!match) return undefined;
  return (Number(match[1]) - 1) * 250 + Number(match[2]) - 1;
}

/** `count` Create(Note)s, signed, from the first `keyCount` servers' authors in turn. */
async function signedCreates(inbox: string, count: number, tag: string) {
  const signed: { headers: Record<string, string>; body: string }[] = [];
  for (let i = 0; i < count; i++) {
    const index = i % keyCount;
    const actor = actorOf(index);
    const note = `${origin(index)}/notes/${tag}-${i}`;
    const body = JSON.stringify({
      "@context": "https://www.w3.org/ns/activitystreams",
      id: `${note}/activity`,
      type: "Create",
      actor,
      published: new Date().toISOString(),
      to: ["https://www.w3.org/ns/activitystreams#Public"],
      cc: [`${actor}/followers`],
      object: {
        id: note,
        type: "Note",
        attributedTo: actor,
        content: `<p>intake ${tag} ${i}</p>`,
        published: new Date().toISOString(),
        to: ["https://www.w3.org/ns/activitystreams#Public"],
        cc: [`${actor}/followers`],
      },
    });
    const request = await signRequest(
      new Request(inbox, { method: "POST", headers: { "content-type": AP }, body }),
      keys[index].privateKey,
      new URL(`${actor}#main-key`),
      { spec: "draft-cavage-http-signatures-12" },
    );
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    signed.push({ headers, body });
  }
  return signed;
}

/**
 * What POST /sign prepared for the next POST /intake: remote servers sign on their own machines,
 * so the RSA signing is done before the measured POSTs, not on the measured machine's cores
 * while they run.
 */
let prepared: { inbox: string; signed: Awaited<ReturnType<typeof signedCreates>> } | undefined;

async function sign(options: { inbox: string; count: number; tag: string }) {
  const signStarted = performance.now();
  prepared = { inbox: options.inbox, signed: await signedCreates(options.inbox, options.count, options.tag) };
  return { signMs: Math.round(performance.now() - signStarted) };
}

async function intake(options: { connections: number }) {
  if (!prepared) throw new Error("POST /sign first");
  const { signed } = prepared;
  const inbox = prepared.inbox;
  prepared = undefined;
  const cpuBefore = process.cpuUsage();
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const startedAt = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      for (let i = next++; i < signed.length; i = next++) {
        const started = performance.now();
        const status = await new Promise<number>((resolve) => {
          const request = http.request(inbox, { method: "POST", headers: signed[i].headers, agent }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          });
          request.on("error", () => resolve(0));
          request.end(signed[i].body);
        });
        latencies.push(performance.now() - started);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  const endedAt = Date.now();
  const cpu = process.cpuUsage(cpuBefore);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]);
  return {
    startedAt,
    endedAt,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    statuses,
    p50: at(0.5),
    p99: at(0.99),
    max: at(1),
  };
}

async function control(incoming: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const url = new URL(incoming.url ?? "/", "http://control");
  const send = (value: unknown) => {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
  };
  if (url.pathname === "/totals") return send(totals);
  if (url.pathname === "/stats") {
    const record = byActivity.get(url.searchParams.get("activity") ?? "");
    return send(
      record ? { ...record, inboxes: record.inboxes.size } : { posts: 0, verified: 0, failed: 0, inboxes: 0 },
    );
  }
  if ((url.pathname === "/sign" || url.pathname === "/intake") && incoming.method === "POST") {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const options = JSON.parse(Buffer.concat(chunks).toString());
    return send(await (url.pathname === "/sign" ? sign(options) : intake(options)));
  }
  response.writeHead(404).end();
}

async function listenAll(candidate: number): Promise<http.Server[] | undefined> {
  const listening: http.Server[] = [];
  for (let index = 0; index < servers; index++) {
    const server = http.createServer({ keepAliveTimeout: 30_000 }, (request, response) => {
      answer(request, response).catch(() => {
        response.writeHead(500).end();
      });
    });
    const ok = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(candidate, simAddress(index), () => resolve(true));
    });
    if (!ok) {
      await Promise.all(listening.map((s) => new Promise((resolve) => s.close(resolve))));
      return undefined;
    }
    listening.push(server);
  }
  return listening;
}

for (let i = 0; i < keyCount; i++) {
  keys.push(await generateCryptoKeyPair("RSASSA-PKCS1-v1_5"));
  pems.push(KeyObject.from(keys[i].publicKey).export({ type: "spki", format: "pem" }).toString());
}
// One port free on every address: tried from a random one up.
for (let candidate = 20_000 + Math.floor(Math.random() * 30_000); !port; candidate++) {
  if (await listenAll(candidate)) port = candidate;
}
const controlServer = http.createServer((request, response) => {
  control(request, response).catch((err) => {
    response.writeHead(500).end(String(err));
  });
});
await new Promise<void>((resolve) => controlServer.listen(0, "127.0.0.1", resolve));
console.log(JSON.stringify({ port, control: (controlServer.address() as AddressInfo).port }));
