// A local account as ActivityPub's Person (docs/federation.md#actors): its profile is drawn from
// the account's wire fields (src/projection/account.ts, docs/http.md#one-shape), the same values
// REST and GraphQL answer, so a change of one of them changes the Person too.

import type { Context } from "@fedify/fedify";
import { type CryptographicKey, Endpoints, Image, type Multikey, Person } from "@fedify/fedify/vocab";
import { Temporal } from "@js-temporal/polyfill";
import type { Config } from "../config.ts";
import type { Account } from "../generated/prisma/client.ts";
import { ACCOUNT } from "../projection/account.ts";
import type { Viewer } from "../projection/field.ts";
import type { FederationData } from "./data.ts";
import { htmlOf } from "./html.ts";

/** What of an account row its Person shows. */
export type PersonAccount = Pick<
  Account,
  | "id"
  | "name"
  | "host"
  | "nickname"
  | "bio"
  | "avatarFileId"
  | "avatarUrl"
  | "headerFileId"
  | "headerUrl"
  | "locked"
  | "createdAt"
>;

/** The Person's own URLs and keys, which Fedify's context names. */
export interface PersonLinks {
  id: URL;
  inbox: URL;
  outbox: URL;
  followers: URL;
  following: URL;
  sharedInbox: URL;
  publicKey: CryptographicKey;
  assertionMethods: Multikey[];
}

/**
 * The Person of local account `account` at its id, as another server is shown it: at its id, and
 * in the Update(Person) its profile change sends (src/federation/profile.ts).
 */
export async function localPerson(ctx: Context<FederationData>, account: PersonAccount): Promise<Person> {
  const identifier = account.id.toString();
  const [rsa, ed25519] = await ctx.getActorKeyPairs(identifier);
  return personOf(ctx.data.config, account, {
    id: ctx.getActorUri(identifier),
    inbox: ctx.getInboxUri(identifier),
    outbox: ctx.getOutboxUri(identifier),
    followers: ctx.getFollowersUri(identifier),
    following: ctx.getFollowingUri(identifier),
    sharedInbox: ctx.getInboxUri(),
    publicKey: rsa.cryptographicKey,
    assertionMethods: [ed25519.multikey],
  });
}

export function personOf(
  config: Pick<Config, "publicUrl" | "localHost">,
  account: PersonAccount,
  links: PersonLinks,
): Person {
  // Nobody in particular: another server sees what an anonymous REST client does.
  const viewer: Viewer = { viewerId: undefined, publicUrl: config.publicUrl, localHost: config.localHost };
  const bio = ACCOUNT.bio.value(account, viewer);
  const avatar = ACCOUNT.avatar.value(account, viewer);
  const header = ACCOUNT.header.value(account, viewer);
  return new Person({
    id: links.id,
    // The name without its host: the handle `@name@host` (ACCOUNT.name) is WebFinger's.
    preferredUsername: account.name,
    name: ACCOUNT.nickname.value(account, viewer),
    summary: bio ? htmlOf(bio) : null,
    manuallyApprovesFollowers: ACCOUNT.locked.value(account, viewer),
    icon: avatar ? new Image({ url: new URL(avatar) }) : null,
    image: header ? new Image({ url: new URL(header) }) : null,
    // The account as a REST client (the nearest thing to a profile page) reads it, by name.
    url: new URL(`${config.publicUrl}/accounts/${encodeURIComponent(account.name)}`),
    published: Temporal.Instant.from(ACCOUNT.createdAt.value(account, viewer)),
    // Any account can be found by name and any public note by search (docs/search.md), with no
    // opting out: what Mastodon reads these two for (docs/federation.md#actors).
    discoverable: true,
    indexable: true,
    inbox: links.inbox,
    outbox: links.outbox,
    followers: links.followers,
    following: links.following,
    endpoints: new Endpoints({ sharedInbox: links.sharedInbox }),
    publicKey: links.publicKey,
    assertionMethods: links.assertionMethods,
  });
}
