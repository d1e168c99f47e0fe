// The document loaders Fedify fetches every remote object, key and JSON-LD context with, on
// safeFetch (docs/federation.md#instance). Fedify's own loaders check a name's addresses before
// fetching and then connect by the name again (DNS rebinding gets past them), and bound neither
// size nor time; so Murmur gives Fedify its own, built on Fedify's parts for the rest (the request,
// the answer's JSON-LD and alternate links, the preloaded contexts).
import { signRequest } from "@fedify/fedify";
import {
  createActivityPubRequest,
  type DocumentLoader,
  FetchError,
  type GetUserAgentOptions,
  getRemoteDocument,
  preloadedContexts,
  type RemoteDocument,
} from "@fedify/vocab-runtime";
import { FETCH_LIMITS, safeFetch } from "./safe-fetch.ts";

export interface LoaderOptions {
  allowPrivate: boolean;
  userAgent: GetUserAgentOptions | string;
  /** Signs each GET as this key (the instance actor's, for servers that refuse unsigned fetches). */
  identity?: { keyId: URL; privateKey: CryptoKey };
  /** Whether a server is blocked here (docs/federation.md#moderation): nothing is fetched of it. */
  blocked?(host: string): Promise<boolean>;
}

export function safeDocumentLoader(options: LoaderOptions): DocumentLoader {
  const load = async (url: string, redirected: number, signal?: AbortSignal | null): Promise<RemoteDocument> => {
    const current = new URL(url).href;
    if (Object.hasOwn(preloadedContexts, current)) {
      return { contextUrl: null, document: preloadedContexts[current], documentUrl: current };
    }
    if (await options.blocked?.(new URL(current).host)) throw new FetchError(current, "a server blocked here");
    const response = await send(current, options, signal ?? undefined);
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      if (redirected >= FETCH_LIMITS.maxRedirects) {
        throw new FetchError(current, `Too many redirections (${redirected + 1})`);
      }
      return load(new URL(location, current).href, redirected + 1, signal);
    }
    // An alternate link followed from the answer counts as one more hop.
    return getRemoteDocument(current, response, (next) => load(next, redirected + 1, signal));
  };
  return (url, loaderOptions) => load(url, 0, loaderOptions?.signal);
}

/**
 * `loader`, answering Fedify's preloaded contexts (ActivityStreams, security, ...: constants of
 * Fedify's) itself, tagged `static`: jsonld.js keeps a remote context resolved, and processed,
 * from one expansion to the next only when its loader tags it so. Untagged, the ActivityStreams
 * context of every received activity was resolved and processed again at each expansion: a
 * Create(Note)'s parse took 621 µs of CPU, 364 µs tagged (bench/README.md, "Intake, 2026-11-27
 * (third)"). Only those constants are tagged: a context fetched from elsewhere may change.
 */
export function staticPreloaded(loader: DocumentLoader): DocumentLoader {
  return (url, options) => {
    if (!Object.hasOwn(preloadedContexts, url)) return loader(url, options);
    const preloaded: RemoteDocument & { tag: string } = {
      contextUrl: null,
      document: preloadedContexts[url],
      documentUrl: url,
      tag: "static",
    };
    return Promise.resolve(preloaded);
  };
}

/**
 * One GET. Signed, it is sent with a draft-cavage signature first (what Mastodon, Misskey and
 * GoToSocial all check) and again with RFC 9421 should the peer answer 400 or 401.
 */
async function send(url: string, options: LoaderOptions, signal?: AbortSignal): Promise<Response> {
  const request = createActivityPubRequest(url, { userAgent: options.userAgent });
  const fetchOptions = { allowPrivate: options.allowPrivate, signal };
  const { identity } = options;
  if (!identity) return safeFetch(request, fetchOptions);
  const sign = (spec: "draft-cavage-http-signatures-12" | "rfc9421") =>
    signRequest(request.clone(), identity.privateKey, identity.keyId, { spec });
  const first = await safeFetch(await sign("draft-cavage-http-signatures-12"), fetchOptions);
  if (first.status !== 400 && first.status !== 401) return first;
  return safeFetch(await sign("rfc9421"), fetchOptions);
}
