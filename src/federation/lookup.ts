// A remote account by its name `@name@host` (docs/federation.md#remote-accounts): WebFinger, then
// its actor, fetched as the instance actor (servers in authorized-fetch mode refuse unsigned GETs).
// Anything that does not resolve is ACCOUNT_NOT_FOUND, as an unknown local name is.
import type { Context } from "@fedify/fedify";
import { type Actor, isActor } from "@fedify/fedify/vocab";
import { DomainError } from "../domain/errors.ts";
import type { FederationData } from "./data.ts";
import { instanceLoader } from "./keys.ts";
import { FETCH_LIMITS, type SafeFetchOptions, safeFetch } from "./safe-fetch.ts";

/** `@name@host` (the leading `@` optional), host with its port if any. */
const HANDLE = /^@?([^@\s/?#]+)@([^@\s/?#\\]+)$/;

const ACTIVITY_TYPES = /^application\/(activity\+json|ld\+json)\b/;

/**
 * The actor named `@name@host`. WebFinger is asked over https; with FEDERATION_ALLOW_PRIVATE (tests,
 * local setups: docs/federation.md#instance) a lookup that fails over https is asked again over http.
 */
export async function resolveRemoteActor(
  ctx: Context<FederationData>,
  handle: string,
  limits: { timeoutMs?: number } = {},
): Promise<Actor> {
  const match = HANDLE.exec(handle.trim());
  if (!match) throw new DomainError("ACCOUNT_NOT_FOUND");
  const [, name, host] = match;
  let origin: URL;
  try {
    origin = new URL(`https://${host}`);
  } catch {
    throw new DomainError("ACCOUNT_NOT_FOUND");
  }
  // Nothing but a host and port: no user info, no path smuggled in.
  if (origin.host !== host.toLowerCase()) throw new DomainError("ACCOUNT_NOT_FOUND");
  const allowPrivate = ctx.data.config.federationAllowPrivate;
  let actorUrl: URL | undefined;
  for (const scheme of allowPrivate ? ["https:", "http:"] : ["https:"]) {
    actorUrl = await finger(`${scheme}//${origin.host}`, `acct:${name}@${origin.host}`, {
      allowPrivate,
      ...limits,
    }).catch(() => undefined);
    if (actorUrl) break;
  }
  if (!actorUrl) throw new DomainError("ACCOUNT_NOT_FOUND");
  const actor = await instanceLoader(ctx)
    .then((documentLoader) => ctx.lookupObject(actorUrl.href, { documentLoader }))
    .catch(() => null);
  // lookupObject already refuses an object whose id is on another origin than where it was fetched.
  if (!isActor(actor) || !actor.id || !actor.inboxId) throw new DomainError("ACCOUNT_NOT_FOUND");
  return actor;
}

/** The `self` link of `resource`'s WebFinger at `base`, redirects followed (each one checked). */
async function finger(base: string, resource: string, options: SafeFetchOptions): Promise<URL | undefined> {
  let url = new URL(`${base}/.well-known/webfinger?resource=${encodeURIComponent(resource)}`);
  for (let hop = 0; hop <= FETCH_LIMITS.maxRedirects; hop++) {
    const response = await safeFetch(
      new Request(url, { headers: { accept: "application/jrd+json, application/json" }, redirect: "manual" }),
      options,
    );
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      continue;
    }
    if (!response.ok) return undefined;
    const jrd = (await response.json()) as { links?: { rel?: unknown; type?: unknown; href?: unknown }[] };
    const self = (Array.isArray(jrd.links) ? jrd.links : []).find(
      (link) => link?.rel === "self" && typeof link.type === "string" && ACTIVITY_TYPES.test(link.type),
    );
    if (typeof self?.href !== "string") return undefined;
    const href = new URL(self.href);
    return href.protocol === "https:" || href.protocol === "http:" ? href : undefined;
  }
  return undefined;
}
