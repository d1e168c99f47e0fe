// Every fetch federation makes of another server (docs/federation.md#instance): only public
// addresses unless FEDERATION_ALLOW_PRIVATE, checked on the address the socket connects to (a name
// that resolves to a public address when checked and to a private one when connected, DNS
// rebinding, is still refused), with bounded time and size. Redirects are not followed here: the
// caller follows each (src/federation/document-loader.ts), and every hop connects through this check.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { chargeSenderFetch } from "./sender-fetches.ts";

/** A refused fetch: a non-public address, too big, too slow, a bad URL or a broken answer. */
export class UnsafeFetchError extends Error {}

export interface SafeFetchOptions {
  /** FEDERATION_ALLOW_PRIVATE: private, loopback and link-local addresses allowed (tests, local setups). */
  allowPrivate: boolean;
  /** The whole exchange, body included; default FETCH_LIMITS.timeoutMs. */
  timeoutMs?: number;
  /** The body; default FETCH_LIMITS.maxBytes. */
  maxBytes?: number;
  signal?: AbortSignal;
}

/**
 * An actor, a key or a WebFinger answer is a few KiB; Mastodon bounds a fetched body at 1 MiB and
 * its reads at 10 s, so a peer serving more, or slower, is not one to wait for. Five redirects are
 * Fedify's own.
 */
export const FETCH_LIMITS = { timeoutMs: 10_000, maxBytes: 1024 * 1024, maxRedirects: 5 } as const;

/**
 * Whether an address is on the public internet. ipaddr.js (which Fastify already uses through
 * proxy-addr) names every special range: private, loopback, link-local, CGNAT, unique local,
 * multicast, documentation, 6to4, NAT64 and the rest; IPv4-mapped IPv6 is judged as its IPv4.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "unicast";
}

/** dns.lookup, refusing a name any of whose addresses is not public: called as the socket connects. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    const refused = addresses.find((one) => !isPublicAddress(one.address));
    if (refused || addresses.length === 0) {
      const error = new UnsafeFetchError(`${hostname} resolves to a non-public address`) as NodeJS.ErrnoException;
      error.code = "EADDRNOTPUBLIC";
      return callback(error, "", 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
};

/** Statuses whose Response has no body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * Sends `request` and answers its response, redirects included as they are (status and Location).
 * The body is read whole within the time bound, so a peer that trickles it cannot hold us longer.
 */
export async function safeFetch(request: Request, options: SafeFetchOptions): Promise<Response> {
  const url = new URL(request.url);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UnsafeFetchError(`unsupported protocol: ${url.protocol}`);
  }
  // While an inbox POST is checked, each fetch is counted against its sender (src/federation/sender-fetches.ts).
  chargeSenderFetch(url);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  // An address in the URL connects without a lookup: checked here instead.
  if (!options.allowPrivate && isIP(host) && !isPublicAddress(host)) {
    throw new UnsafeFetchError(`${host} is not a public address`);
  }
  const timeoutMs = options.timeoutMs ?? FETCH_LIMITS.timeoutMs;
  const maxBytes = options.maxBytes ?? FETCH_LIMITS.maxBytes;
  const signals = [AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])];
  const signal = AbortSignal.any(signals);
  signal.throwIfAborted();
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });

  return new Promise<Response>((resolve, reject) => {
    const fail = (err: unknown) => {
      outgoing.destroy();
      reject(
        err instanceof UnsafeFetchError ? err : new UnsafeFetchError(`fetch of ${url.href} failed`, { cause: err }),
      );
    };
    const onAbort = () => fail(new UnsafeFetchError(`fetch of ${url.href} took longer than ${timeoutMs} ms`));
    signal.addEventListener("abort", onAbort, { once: true });
    const done = () => signal.removeEventListener("abort", onAbort);
    const outgoing = (url.protocol === "https:" ? https : http).request(
      url,
      {
        method: request.method,
        headers,
        // No pooled sockets: each connection goes through the lookup above.
        agent: false,
        ...(options.allowPrivate ? {} : { lookup: publicLookup }),
      },
      (incoming) => {
        const status = incoming.statusCode ?? 0;
        if (Number(incoming.headers["content-length"]) > maxBytes) {
          done();
          return fail(new UnsafeFetchError(`${url.href} answers more than ${maxBytes} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        incoming.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            done();
            return fail(new UnsafeFetchError(`${url.href} answers more than ${maxBytes} bytes`));
          }
          chunks.push(chunk);
        });
        incoming.on("error", (err) => {
          done();
          fail(err);
        });
        incoming.on("end", () => {
          done();
          if (status < 200 || status > 599) return fail(new UnsafeFetchError(`${url.href} answered status ${status}`));
          const answerHeaders = new Headers();
          for (let i = 0; i + 1 < incoming.rawHeaders.length; i += 2) {
            answerHeaders.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
          }
          resolve(
            new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), { status, headers: answerHeaders }),
          );
        });
      },
    );
    outgoing.on("error", (err) => {
      done();
      fail(err);
    });
    outgoing.end(body);
  });
}
