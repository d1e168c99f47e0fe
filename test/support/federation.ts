// Murmur servers that federate with each other in one test file: each listens on an address of its
// own (127.0.0.2, 127.0.0.3, ...), so that each is a host of its own, with FEDERATION_ALLOW_PRIVATE on
// (docs/federation.md#instance) to let them reach one another there.
import type http from "node:http";
import net, { type AddressInfo } from "node:net";
import { verifyRequest } from "@fedify/fedify";
import { expect } from "vitest";
import { safeDocumentLoader } from "../../src/federation/document-loader.ts";
import { startTestServer, type TestServer } from "./server.ts";

/**
 * What a federating server answers outside openapi.json, documented in docs/federation.md instead:
 * discovery, actors, notes and collections asked for as ActivityPub, and inbox POSTs.
 */
export const FEDERATION_ANSWERS = /^(GET \/(\.well-known\/|accounts\/|notes\/|nodeinfo\/)|POST \/(inbox|accounts\/))/;

/**
 * Closes a test server that federated: its check of every answer against openapi.json may name only
 * federation's answers (`answers`, for a file whose server answers fewer).
 */
export async function closeFederating(server: TestServer | undefined, answers = FEDERATION_ANSWERS): Promise<void> {
  await server?.close().catch((err: Error) => {
    const lines = err.message.split("\n").slice(1);
    expect(lines.filter((line) => !answers.test(line))).toEqual([]);
  });
}

/** A free port on `host`, for a server whose PUBLIC_URL must name it before it starts. */
export async function freePort(host: string): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, host, resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export interface ListeningOptions {
  /** The port to listen on (a server started again at its address); a free one by default. */
  port?: number;
  /** More configuration, over PUBLIC_URL and FEDERATION_ALLOW_PRIVATE. */
  env?: Record<string, string>;
  /** A migrated database of the caller's (a server started again on its data); a fresh one by default. */
  databaseUrl?: string;
}

/** A test server listening at `url`, its PUBLIC_URL. */
export type ListeningServer = TestServer & { url: string };

/** A test server listening at `http://<host>:<port>`. */
export async function listening(host: string, options: ListeningOptions = {}): Promise<ListeningServer> {
  const port = options.port ?? (await freePort(host));
  const url = `http://${host}:${port}`;
  const server = await startTestServer(
    { PUBLIC_URL: url, FEDERATION_ALLOW_PRIVATE: "true", ...options.env },
    options.databaseUrl,
  );
  await server.app.listen({ port, host });
  return Object.assign(server, { url });
}

/**
 * A POST to an inbox of a test's own peer at `url`: its body, and whether its HTTP signature
 * verifies (the signer's key fetched from the server that sent it, as Fedify's verifyRequest does).
 */
export async function receivedPost(
  incoming: http.IncomingMessage,
  url: string,
): Promise<{ body: Buffer; verified: boolean }> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const headers = new Headers();
  for (let i = 0; i + 1 < incoming.rawHeaders.length; i += 2) {
    headers.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
  }
  const request = new Request(`${url}${incoming.url}`, { method: incoming.method, headers, body });
  const loader = safeDocumentLoader({ allowPrivate: true, userAgent: "test-peer" });
  let verified = false;
  try {
    verified = (await verifyRequest(request, { documentLoader: loader, contextLoader: loader })) !== null;
  } catch {}
  return { body, verified };
}
