// Remote accounts (docs/federation.md#remote-accounts): another server's actor stored as a row of
// `accounts` with its host and actor id (migration 20261127171000_remote_accounts), under a local
// snowflake id, so every rule and view of the domain takes it as it takes a local account. Stored
// on first use of its name (or of its actor, by an activity), fetched again on use once a day old,
// and on its `Update`.
import type { Context, Federation } from "@fedify/fedify";
import { type Actor, type Image, isActor, Link, type Recipient } from "@fedify/fedify/vocab";
import { compile, type HtmlToTextOptions } from "html-to-text";
import { uniqueViolation } from "../db/client.ts";
import { codePoints, LIMITS, remoteKeyOf } from "../domain/accounts/rules.ts";
import type { Federator } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import type { Account } from "../generated/prisma/client.ts";
import type { AppServices } from "../services.ts";
import type { FederationData } from "./data.ts";
import { instanceLoader } from "./keys.ts";
import { resolveRemoteActor } from "./lookup.ts";

/** A stored actor older than this is fetched again when it is used. */
/** A stored remote account as a recipient of deliveries (its shared inbox preferred); null without an inbox. */
export function remoteRecipient(remote: Pick<Account, "uri" | "inboxUrl" | "sharedInboxUrl">): Recipient | null {
  if (!remote.uri || !remote.inboxUrl) return null;
  return {
    id: new URL(remote.uri),
    inboxId: new URL(remote.inboxUrl),
    endpoints: remote.sharedInboxUrl ? { sharedInbox: new URL(remote.sharedInboxUrl) } : null,
  };
}

export const REFRESH_AFTER_MS = 24 * 60 * 60 * 1000;

/** Control characters but tab and line feed, and the non-characters PostgreSQL text refuses to keep whole. */
const CONTROL = /[^\P{Cc}\t\n]|[\ufffe\uffff]/gu;

/** The Federator the domain is given (src/domain/context.ts): remote accounts by name, and refreshes. */
export function remoteAccounts(
  federation: Federation<FederationData>,
  services: AppServices,
): Pick<Federator, "remoteAccount" | "used"> {
  // The primary, whatever a request reads from: what is stored here is read back at once.
  const { db } = services;
  const ctx = federation.createContext(new URL(services.config.publicUrl), services);
  const refreshing = new Map<bigint, Promise<Account>>();

  /** The stored account fetched again; the stored row as it was when its actor cannot be had. */
  const refresh = (stored: Account): Promise<Account> => {
    let running = refreshing.get(stored.id);
    if (!running) {
      running = fetchActor(ctx, stored.uri as string)
        .then((actor) => (actor ? storeActor(ctx, actor) : stored))
        .catch((err: unknown) => {
          ctx.data.log.info({ err, uri: stored.uri }, "remote actor not refreshed");
          return stored;
        })
        .finally(() => refreshing.delete(stored.id));
      refreshing.set(stored.id, running);
    }
    return running;
  };

  return {
    async remoteAccount(name, host) {
      // A blocked server's accounts are no one here (docs/federation.md#moderation).
      if ((await ctx.data.instances.of(host.toLowerCase())) === "block") throw new DomainError("ACCOUNT_NOT_FOUND");
      const stored = await db.account.findUnique({ where: { nameKey: remoteKeyOf(name, host) } });
      if (stored?.deletedAt) throw new DomainError("ACCOUNT_NOT_FOUND");
      if (stored) return stale(stored) ? refresh(stored) : stored;
      return storeActor(ctx, await resolveRemoteActor(ctx, `@${name}@${host}`));
    },
    used(account) {
      void db.account
        .findUnique({ where: { id: account.id, deletedAt: null } })
        .then((stored) => (stored?.uri && stale(stored) ? refresh(stored) : undefined))
        .catch((err: unknown) => ctx.data.log.warn({ err }, "remote account not refreshed"));
    },
  };
}

/**
 * The remote account of actor `uri`, for an activity it signed: as stored, fetched and stored when
 * unknown or a day old (the stored row kept when the fetch fails). Null for a deleted account, an
 * actor that cannot be had, or one of this server.
 */
export async function actorAccount(ctx: Context<FederationData>, uri: URL): Promise<Account | null> {
  if (uri.origin === new URL(ctx.data.config.publicUrl).origin) return null;
  const stored = await ctx.data.db.account.findUnique({ where: { uri: uri.href } });
  if (stored?.deletedAt) return null;
  if (stored && !stale(stored)) return stored;
  const actor = await fetchActor(ctx, uri.href).catch(() => null);
  if (!actor) return stored;
  return storeActor(ctx, actor).catch(() => stored);
}

/** Whether a stored remote account is fetched again before it is used (its profile may have changed). */
export function stale(account: Pick<Account, "fetchedAt">): boolean {
  return !account.fetchedAt || Date.now() - account.fetchedAt.getTime() > REFRESH_AFTER_MS;
}

/** The actor at `uri`, fetched signed as the instance actor; null when it is no actor of that id. */
async function fetchActor(ctx: Context<FederationData>, uri: string): Promise<Actor | null> {
  const documentLoader = await instanceLoader(ctx);
  const actor = await ctx.lookupObject(uri, { documentLoader });
  return isActor(actor) && actor.id?.href === uri ? actor : null;
}

/**
 * `actor` stored as a remote account, new or updated (a deleted one stays as it is). ACCOUNT_NOT_FOUND
 * for an actor that cannot be one: no name, no inbox, a name no `@name@host` can carry, or a name
 * another actor of its server holds here.
 */
export async function storeActor(ctx: Context<FederationData>, actor: Actor): Promise<Account> {
  const { db, ids } = ctx.data;
  const name = actor.preferredUsername?.toString() ?? "";
  if (!actor.id || !actor.inboxId || !/^[^@\s/?#\\]+$/.test(name)) throw new DomainError("ACCOUNT_NOT_FOUND");
  // This server's own actors are its local accounts.
  if (actor.id.origin === new URL(ctx.data.config.publicUrl).origin) throw new DomainError("ACCOUNT_NOT_FOUND");
  const host = actor.id.host;
  if (codePoints(name) + codePoints(host) + 2 > LIMITS.qualifiedNameMax) throw new DomainError("ACCOUNT_NOT_FOUND");
  const loaders = { documentLoader: await instanceLoader(ctx), suppressError: true };
  const [icon, image] = await Promise.all([actor.getIcon(loaders), actor.getImage(loaders)]);
  const profile = {
    name,
    nameKey: remoteKeyOf(name, host),
    nickname:
      displayText(actor.name?.toString(), LIMITS.nicknameMax)
        .replace(/[\t\n]+/g, " ")
        .trim() || name,
    bio: displayText(actor.summary ? bioText(actor.summary.toString()) : "", LIMITS.bioMax),
    locked: actor.manuallyApprovesFollowers ?? false,
    inboxUrl: actor.inboxId.href,
    sharedInboxUrl: actor.endpoints?.sharedInbox?.href ?? null,
    followersUrl: actor.followersId?.href ?? null,
    avatarUrl: imageUrl(icon),
    headerUrl: imageUrl(image),
    fetchedAt: new Date(),
  };
  const uri = actor.id.href;
  for (let attempt = 0; ; attempt++) {
    const stored = await db.account.findUnique({ where: { uri } });
    try {
      if (stored?.deletedAt) return stored;
      if (stored) return await db.account.update({ where: { id: stored.id }, data: profile });
      const id = ids.next();
      // No e-mail or passphrase: an address no mail reaches, and a hash no passphrase verifies against.
      const email = `remote-${id}@remote.invalid`;
      return await db.account.create({
        data: { id, host, uri, email, emailKey: email, passphraseHash: "", verified: false, ...profile },
      });
    } catch (err) {
      // Another request stored it first (read again), or its name is another actor's here.
      if (!uniqueViolation(err) || attempt > 0) {
        if (uniqueViolation(err)) throw new DomainError("ACCOUNT_NOT_FOUND");
        throw err;
      }
    }
  }
}

/** Remote HTML as the plain text Murmur's bios are: paragraphs and line breaks kept, links as their text. */
export const HTML_TO_TEXT: HtmlToTextOptions = {
  wordwrap: false,
  selectors: [
    { selector: "a", options: { ignoreHref: true } },
    { selector: "p", options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
    { selector: "img", format: "skip" },
  ],
};
/** HTML_TO_TEXT compiled once, not for every actor read. */
const bioText = compile(HTML_TO_TEXT);

/** Remote text as Murmur's display text rules keep it (rules.ts checkText): storable, bounded. */
export function displayText(text: string | undefined, max: number): string {
  const clean = (text ?? "").toWellFormed().replace(CONTROL, "");
  return codePoints(clean) <= max ? clean : Array.from(clean).slice(0, max).join("");
}

function imageUrl(image: Image | null): string | null {
  const url = image?.url instanceof Link ? image.url.href : image?.url;
  return url instanceof URL && (url.protocol === "https:" || url.protocol === "http:") ? url.href : null;
}
