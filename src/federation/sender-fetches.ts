// What checking an inbox POST may make this server fetch on its sender's behalf
// (docs/federation.md#signatures): its signer's key (again, when a kept key fails: a rotation), the
// actor owning it, the JSON-LD contexts its body names. Each is a request to a URL of the sender's
// choosing, so a hostile server could have this server fetch without end: keys that always fail,
// a new key id or a new context URL in every POST. The POST is handled in a scope that names its
// sending server (as its signature's key names it, src/federation/inbox-gate.ts), and every fetch
// made in that scope (src/federation/safe-fetch.ts) is counted against that server: at most
// FEDERATION_INBOX_FETCH_RATE a minute per process. Past it the fetch is refused, and the POST,
// which could not be checked, is answered 429 with Retry-After (a server tries a 429 again later;
// a 401 it may drop). Fetches made later, while the queue handles what was taken, are no part of it.
import { AsyncLocalStorage } from "node:async_hooks";
import LocalStore from "@fastify/rate-limit/store/LocalStore.js";
import type { KvStore } from "@fedify/fedify";
import { sendingHost } from "./inbox-gate.ts";

const WINDOW_MS = 60_000;
/** Sending servers counted: an LRU of this many. */
const COUNTERS = 10_000;

interface Receiving {
  host: string;
  budget: SenderFetchBudget;
  /** When a fetch was refused: the seconds until the sender's budget is renewed. */
  refusedFor?: number;
  /** The URLs refused. */
  refused: string[];
}

const receiving = new AsyncLocalStorage<Receiving>();

/** A fetch refused: the sending server has had its fetches for this minute. */
export class SenderFetchRefused extends Error {}

/** Each sending server's (or host's) fetches this minute, in this process. */
export class SenderFetchBudget {
  private readonly counters = new LocalStore(false, false, COUNTERS);

  constructor(readonly perMinute: number) {}

  /** One fetch for `host`: undefined when within its budget, else the seconds until it is renewed. */
  take(host: string): number | undefined {
    let taken: { current: number; ttl: number } | undefined;
    // LocalStore answers at once.
    this.counters.incr(host, (_err, result) => (taken = result ?? undefined), WINDOW_MS, this.perMinute);
    if (!taken || taken.current <= this.perMinute) return undefined;
    return Math.max(1, Math.ceil(taken.ttl / 1000));
  }
}

/**
 * Counts a fetch of `url` against the server whose inbox POST is being checked, if one is:
 * throws SenderFetchRefused past its budget. Outside such a scope, does nothing.
 */
export function chargeSenderFetch(url: URL): void {
  const scope = receiving.getStore();
  if (!scope) return;
  const wait = scope.budget.take(scope.host);
  if (wait === undefined) return;
  refuseFetch(url, wait, `${scope.host} has had its fetches for this minute`);
}

/**
 * Refuses a fetch of `url` for `why`, for `wait` seconds: an inbox POST being checked is then
 * answered 429 with that Retry-After (its sender may try again), as for its own budget.
 */
export function refuseFetch(url: URL, wait: number, why: string): never {
  const scope = receiving.getStore();
  if (scope) {
    scope.refusedFor = Math.max(scope.refusedFor ?? 0, wait);
    scope.refused.push(url.href);
  }
  throw new SenderFetchRefused(`fetch of ${url.href} refused: ${why}`);
}

/** The sender unsigned POSTs count as: no host is named so. */
const UNSIGNED = "(unsigned)";

/** Where Fedify keeps the keys it fetched (its default prefix), and why a fetch of one failed. */
const PUBLIC_KEYS = ["_fedify", "publicKey"] as const;

/**
 * Runs `run` (Fedify's handling of the inbox POST `request`) in the scope of its sending server,
 * and answers 429 RATE_LIMITED when its checking needed a fetch refused (whatever Fedify answered:
 * 401 for a key not fetched, 400 or a throw for a context not loaded). Fedify keeps a key it could
 * not fetch as unavailable for ten minutes (and one it fetched again in vain in place of the one
 * it had): what it kept of a refused URL is forgotten, so that the sender's next POST, after its
 * wait, fetches it anew.
 */
export async function withSenderFetches(
  request: Request,
  budget: SenderFetchBudget,
  kv: KvStore,
  run: () => Promise<Response>,
): Promise<Response> {
  const host = sendingHost({
    signature: request.headers.get("signature") ?? undefined,
    "signature-input": request.headers.get("signature-input") ?? undefined,
  });
  // Unsigned POSTs (refused, unless a signature in the body verifies) share one budget: Fedify
  // reads their JSON-LD, fetching its contexts, before it refuses them.
  const scope: Receiving = { host: host ?? UNSIGNED, budget, refused: [] };
  let response: Response;
  try {
    response = await receiving.run(scope, run);
  } catch (err) {
    if (scope.refusedFor === undefined) throw err;
    response = new Response(null, { status: 400 });
  }
  if (scope.refusedFor === undefined) return response;
  for (const url of scope.refused) {
    await kv.delete([...PUBLIC_KEYS, url]);
    await kv.delete([...PUBLIC_KEYS, "__fetchError", url]);
  }
  if (response.ok) return response;
  await response.body?.cancel();
  return Response.json(
    { error: "RATE_LIMITED" },
    { status: 429, headers: { "retry-after": String(scope.refusedFor) } },
  );
}
