// Another server whose accounts answer Follows: a small HTTP server of a test's own on an address
// of its own (127.0.0.x; the Murmur server needs FEDERATION_ALLOW_PRIVATE), serving WebFinger and
// each account's actor with its public key, recording every POST its inboxes are sent (signature
// checked, as test/support/peer.ts's), and answering a Follow with an Accept it signs and POSTs to
// the follower's server's shared inbox, as the account's `answers` say: every Follow, none, or
// every one but the first (an Accept lost). A slow server: each POST is answered `delayMs` after
// it came, if its sender is still there to hear it (`answered`: what its senders know arrived).
import { KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { signRequest } from "@fedify/fedify";
import { receivedPost } from "./federation.ts";
import { rsaKeyPair } from "./keys.ts";
import type { PeerPost } from "./peer.ts";

const AP = "application/activity+json";

export type Answers = "all" | "none" | "all-but-first";

export class SigningPeer {
  readonly posts: PeerPost[] = [];
  /** How long each POST waits for its answer. */
  delayMs = 0;
  /** When set, the status every POST is answered with (a failing server); each is recorded still. */
  failWith = 0;
  /** The ids of the activities answered 2xx, as they were (a sender gone meanwhile is not answered). */
  readonly answered: string[] = [];
  /** The Accepts sent, and the status each got. */
  readonly accepts: { follow: string; status: number }[] = [];
  port = 0;
  private server?: http.Server;
  private keys?: CryptoKeyPair;
  private pem = "";
  private readonly accounts = new Map<string, Answers>();
  private accepted = 0;

  constructor(readonly address: string) {}

  get url(): string {
    return `http://${this.address}:${this.port}`;
  }

  get host(): string {
    return `${this.address}:${this.port}`;
  }

  actor(name: string): string {
    return `${this.url}/users/${name}`;
  }

  /** Account `name` from now on, answering Follows as `answers` says. */
  serve(name: string, answers: Answers): void {
    this.accounts.set(name, answers);
  }

  /** The activities of `type` account `name`'s inboxes (or the shared one, naming it) were sent. */
  // biome-ignore lint/suspicious/noExplicitAny: an activity as JSON-LD, read field by field
  received(type: string, name: string): any[] {
    const actor = this.actor(name);
    return this.posts
      .map((post) => post.activity)
      .filter((activity) => {
        if (activity?.type !== type) return false;
        const object = activity.object;
        return object === actor || object?.object === actor;
      });
  }

  async start(): Promise<void> {
    this.keys = await rsaKeyPair();
    this.pem = KeyObject.from(this.keys.publicKey).export({ type: "spki", format: "pem" }).toString();
    this.server = http.createServer((request, response) => void this.answer(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, this.address, resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async answer(incoming: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(incoming.url ?? "/", this.url);
    if (incoming.method === "GET") {
      const finger = /^acct:([^@]+)@/.exec(url.searchParams.get("resource") ?? "")?.[1];
      const name = url.pathname === "/.well-known/webfinger" ? finger : /^\/users\/([^/]+)$/.exec(url.pathname)?.[1];
      if (!name || !this.accounts.has(name)) return void response.writeHead(404).end();
      const body =
        url.pathname === "/.well-known/webfinger"
          ? {
              subject: `acct:${name}@${this.host}`,
              links: [{ rel: "self", type: AP, href: this.actor(name) }],
            }
          : {
              "@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
              id: this.actor(name),
              type: "Person",
              preferredUsername: name,
              inbox: `${this.actor(name)}/inbox`,
              endpoints: { sharedInbox: `${this.url}/inbox` },
              publicKey: { id: `${this.actor(name)}#main-key`, owner: this.actor(name), publicKeyPem: this.pem },
            };
      return void response.writeHead(200, { "content-type": AP }).end(JSON.stringify(body));
    }
    const { body, verified } = await receivedPost(incoming, this.url);
    let activity: { type?: string; id?: string; actor?: string; object?: unknown } | null = null;
    try {
      activity = JSON.parse(body.toString());
    } catch {}
    this.posts.push({ path: incoming.url ?? "", verified, activity });
    if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    // A sender that died meanwhile never hears the answer.
    if (response.destroyed || incoming.socket.destroyed) return;
    if (this.failWith) return void response.writeHead(this.failWith).end();
    response.writeHead(verified ? 202 : 401).end();
    if (verified && typeof activity?.id === "string") this.answered.push(activity.id);
    if (verified && activity?.type === "Follow" && typeof activity.object === "string") {
      const name = activity.object.startsWith(`${this.url}/users/`) ? activity.object.slice(this.url.length + 7) : "";
      const answers = this.accounts.get(name);
      const follows = this.received("Follow", name).filter((follow) => follow.actor === activity.actor).length;
      if (answers === "all" || (answers === "all-but-first" && follows > 1)) await this.accept(name, activity);
    }
  }

  /** Account `name`'s `activity` (its actor and context added), signed and POSTed to `inbox`; the status it got. */
  async post(name: string, inbox: string, activity: Record<string, unknown>): Promise<number> {
    if (!this.keys) throw new Error("peer not started");
    const body = JSON.stringify({
      "@context": "https://www.w3.org/ns/activitystreams",
      actor: this.actor(name),
      ...activity,
    });
    const request = await signRequest(
      new Request(inbox, { method: "POST", headers: { "content-type": AP }, body }),
      this.keys.privateKey,
      new URL(`${this.actor(name)}#main-key`),
      { spec: "draft-cavage-http-signatures-12" },
    );
    const answered = await fetch(request);
    await answered.body?.cancel();
    return answered.status;
  }

  /** Account `name`'s Accept of `follow`, signed and POSTed to its sender's shared inbox. */
  private async accept(name: string, follow: { id?: string; actor?: string }): Promise<void> {
    if (!this.keys || !follow.actor) return;
    const accept = JSON.stringify({
      "@context": "https://www.w3.org/ns/activitystreams",
      id: `${this.actor(name)}#accepts/${++this.accepted}`,
      type: "Accept",
      actor: this.actor(name),
      object: { id: follow.id, type: "Follow", actor: follow.actor, object: this.actor(name) },
    });
    const request = await signRequest(
      new Request(new URL("/inbox", follow.actor), {
        method: "POST",
        headers: { "content-type": AP },
        body: accept,
      }),
      this.keys.privateKey,
      new URL(`${this.actor(name)}#main-key`),
      { spec: "draft-cavage-http-signatures-12" },
    );
    const answered = await fetch(request).catch(() => undefined);
    await answered?.body?.cancel();
    this.accepts.push({ follow: follow.id ?? "", status: answered?.status ?? 0 });
  }
}
