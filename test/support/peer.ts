// Another server played by a small HTTP server of a test's own, on an address of its own
// (127.0.0.3, ...; test/support/federation.ts's servers need FEDERATION_ALLOW_PRIVATE): its inboxes
// record each POST, checking its signature with Fedify's verifyRequest (receivedPost), and it
// answers WebFinger and the actor of each name given to `serve`, so that a Murmur server resolves
// `@name@<its host>` as it does another server's account.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { remoteKeyOf } from "../../src/domain/accounts/rules.ts";
import { receivedPost } from "./federation.ts";
import type { TestServer } from "./server.ts";

export interface PeerPost {
  path: string;
  verified: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: an activity as JSON-LD, read field by field
  activity: any;
}

export class Peer {
  readonly posts: PeerPost[] = [];
  port = 0;
  private server?: http.Server;
  private readonly served = new Set<string>();

  constructor(readonly address: string) {}

  get url(): string {
    return `http://${this.address}:${this.port}`;
  }

  get host(): string {
    return `${this.address}:${this.port}`;
  }

  async start(): Promise<void> {
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

  /** The actor id of this peer's account `name`. */
  actor(name: string): string {
    return `${this.url}/users/${name}`;
  }

  /** Answers WebFinger and the actor of account `name` from now on (else 404). */
  serve(name: string): void {
    this.served.add(name);
  }

  /** The posts of activities whose object is `id` (the object itself or its id). */
  about(id: string): PeerPost[] {
    return this.posts.filter((post) => (post.activity.object?.id ?? post.activity.object) === id);
  }

  /** Account `name` of this peer stored on `server`, as a resolved remote account is. */
  async stored(server: TestServer, name: string) {
    const id = server.services.ids.next();
    const email = `remote-${id}@remote.invalid`;
    return server.services.db.account.create({
      data: {
        id,
        name,
        nameKey: remoteKeyOf(name, this.host),
        nickname: name,
        host: this.host,
        uri: this.actor(name),
        inboxUrl: `${this.actor(name)}/inbox`,
        sharedInboxUrl: `${this.url}/inbox`,
        email,
        emailKey: email,
        passphraseHash: "",
        fetchedAt: new Date(),
      },
    });
  }

  private async answer(incoming: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(incoming.url ?? "/", this.url);
    if (incoming.method === "GET") {
      const finger = /^acct:([^@]+)@/.exec(url.searchParams.get("resource") ?? "")?.[1];
      const name = url.pathname === "/.well-known/webfinger" ? finger : /^\/users\/([^/]+)$/.exec(url.pathname)?.[1];
      if (!name || !this.served.has(name)) return void response.writeHead(404).end();
      const body =
        url.pathname === "/.well-known/webfinger"
          ? {
              subject: `acct:${name}@${this.host}`,
              links: [{ rel: "self", type: "application/activity+json", href: this.actor(name) }],
            }
          : {
              "@context": "https://www.w3.org/ns/activitystreams",
              id: this.actor(name),
              type: "Person",
              preferredUsername: name,
              inbox: `${this.actor(name)}/inbox`,
              endpoints: { sharedInbox: `${this.url}/inbox` },
            };
      return void response.writeHead(200, { "content-type": "application/activity+json" }).end(JSON.stringify(body));
    }
    const { body, verified } = await receivedPost(incoming, this.url);
    let activity: unknown = null;
    try {
      activity = JSON.parse(body.toString());
    } catch {}
    this.posts.push({ path: incoming.url ?? "", verified, activity });
    response.writeHead(verified ? 202 : 401).end();
  }
}
