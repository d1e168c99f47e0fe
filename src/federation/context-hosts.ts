// JSON-LD contexts fetched from one host (docs/federation.md#signatures). A document names its
// contexts, as many as it likes, at URLs of its choosing, and jsonld.js fetches each it is not
// given; a document is not only an inbox POST's body (bounded per sender,
// src/federation/sender-fetches.ts) but also every note, actor or key fetched later while an
// activity is handled. The fediverse's contexts are few: Fedify preloads the common ones
// (ActivityStreams, security, GoToSocial's, Lemmy's...), and the rest are one a server (Pleroma's
// litepub), each kept five minutes once fetched (kvCache). So at most FEDERATION_INBOX_FETCH_RATE a
// minute are fetched from one host, per process; past it the fetch is refused (the document cannot
// be read), and an inbox POST needing it is 429 with Retry-After.
import { type DocumentLoader, preloadedContexts } from "@fedify/vocab-runtime";
import { refuseFetch, SenderFetchBudget } from "./sender-fetches.ts";

/** `loader` (of contexts) fetching at most `perMinute` documents a minute from one host. */
export function contextsBoundedPerHost(loader: DocumentLoader, perMinute: number): DocumentLoader {
  const budget = new SenderFetchBudget(perMinute);
  return (url, options) => {
    if (!(url in preloadedContexts)) {
      const parsed = new URL(url);
      const wait = budget.take(parsed.host.toLowerCase());
      if (wait !== undefined) refuseFetch(parsed, wait, `${parsed.host} has had its contexts fetched for this minute`);
    }
    return loader(url, options);
  };
}
