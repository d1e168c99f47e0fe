// Field rules (docs/accounts.md#field-rules), lengths in code points (docs/http.md#lengths), and
// account names.
import { z } from "zod";
import { Prisma } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import { DomainError } from "../errors.ts";

export const LIMITS = {
  name: 64,
  emailMin: 7,
  emailMax: 319,
  passphraseMin: 8,
  passphraseMax: 512,
  nicknameMin: 1,
  nicknameMax: 256,
  bioMax: 1024,
  qualifiedNameMax: 512,
} as const;

/**
 * Free text that PostgreSQL cannot store, a NUL character (or broken UTF-16, which would be
 * stored altered), is INVALID_REQUEST. Display text of accounts has its own rule, checkText.
 */
export function checkStorable(...texts: string[]): void {
  for (const text of texts) {
    if (text.includes("\0") || !text.isWellFormed()) throw new DomainError("INVALID_REQUEST");
  }
}

export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const ALL_DIGITS = /^[0-9]+$/;
// Nothing visible: white space, and code points drawn as nothing (zero-width space and joiners,
// the Hangul fillers, variation selectors).
const BLANK = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]*$/u;
// No space, tab, full-width space, newline or NUL (docs/accounts.md#field-rules): no white space or
// control character.
const PASSPHRASE_FORBIDDEN = /[\s\p{Cc}]/u;
// Control characters other than tab and line feed, and the non-characters U+FFFE and U+FFFF.
const CONTROL = /[^\P{Cc}\t\n]|[\ufffe\uffff]/u;
const emailFormat = z.email();

/**
 * A name a new account may take (docs/accounts.md#names), and not all digits: a path segment of
 * digits is an account's id (docs/http.md#account-paths), and an id stays its account's once the
 * account is deleted (docs/accounts.md#deletion), so such a name could only shadow an id or be
 * shadowed by one. Refusing every all-digit name needs no look-up and leaves no race with the id of
 * an account being created.
 */
export function checkAccountName(name: string): void {
  if (!NAME.test(name) || ALL_DIGITS.test(name)) throw new DomainError("INVALID_ACCOUNT_NAME");
  if (codePoints(name) > LIMITS.name) throw new DomainError("TOO_LONG_ACCOUNT_NAME");
}

export function checkEmail(email: string): void {
  const length = codePoints(email);
  if (length < LIMITS.emailMin || length > LIMITS.emailMax || !emailFormat.safeParse(email).success) {
    throw new DomainError("INVALID_EMAIL");
  }
}

export function checkPassphrase(passphrase: string): void {
  const length = codePoints(passphrase);
  if (
    length < LIMITS.passphraseMin ||
    length > LIMITS.passphraseMax ||
    PASSPHRASE_FORBIDDEN.test(passphrase) ||
    !passphrase.isWellFormed()
  ) {
    throw new DomainError("VULNERABLE_PASSPHRASE");
  }
}

/** Display text (nickname, bio): control characters or broken UTF-16 are INVALID_SEQUENCE. */
export function checkText(text: string, min: number, max: number, allowLineBreaks: boolean): void {
  if (!text.isWellFormed() || CONTROL.test(text) || (!allowLineBreaks && /[\t\n]/.test(text))) {
    throw new DomainError("INVALID_SEQUENCE");
  }
  const length = codePoints(text);
  if (length < min || length > max) throw new DomainError("INVALID_REQUEST");
}

/**
 * A title or name people read (a nickname, a list's title) shows something: one that is empty or
 * only blank characters is INVALID_REQUEST, as a length outside the range is.
 */
export function checkNotBlank(text: string): void {
  if (BLANK.test(text)) throw new DomainError("INVALID_REQUEST");
}

/** Unique key of a name or e-mail: names and e-mails are unique case-insensitively. */
export function keyOf(text: string): string {
  return text.toLowerCase();
}

/** `@name@host`: `host` is the account's own server's (a remote account's), else `localHost`. */
export function qualifiedName(name: string, localHost: string, host?: string | null): string {
  return `@${name}@${host ?? localHost}`;
}

/** qualifiedName in SQL, of the name `name` and the remote host `host` (SQL; NULL when local). */
export function qualifiedNameSql(name: Prisma.Sql, localHost: string, host?: Prisma.Sql): Prisma.Sql {
  return host
    ? Prisma.sql`'@' || ${name} || '@' || COALESCE(${host}, ${localHost})`
    : Prisma.sql`'@' || ${name} || '@' || ${localHost}`;
}

/**
 * The local name that `text` names: a plain name, `@name`, or `@name@<host>` of this server.
 * Undefined when it names nothing here (another host, or not a name at all).
 */
export function localNameOf(text: string, host: string): string | undefined {
  const match = /^@?([^@]+)(?:@([^@]+))?$/.exec(text);
  if (!match) return undefined;
  const [, name, nameHost] = match;
  // The host may be given with or without PUBLIC_URL's port.
  const hosts = [host.toLowerCase(), host.toLowerCase().replace(/:\d+$/, "")];
  if (nameHost !== undefined && !hosts.includes(nameHost.toLowerCase())) return undefined;
  return NAME.test(name) ? name : undefined;
}

/**
 * The name and host of another server's account that `text` names (`@name@host`, the leading `@`
 * optional; docs/federation.md#remote-accounts), the host lower-cased. Undefined for a local name
 * or no name: a remote name's own syntax is its server's, so only what cannot be in a name or a
 * host (white space, `/`, `?`, `#`, `\`, another `@`) is refused here.
 */
export function remoteNameOf(text: string, host: string): { name: string; host: string } | undefined {
  if (codePoints(text) > LIMITS.qualifiedNameMax) return undefined;
  const match = /^@?([^@\s/?#\\]+)@([^@\s/?#\\]+)$/.exec(text);
  if (!match || localNameOf(text, host) !== undefined) return undefined;
  const remoteHost = match[2].toLowerCase();
  const local = host.toLowerCase();
  if (remoteHost === local || remoteHost === local.replace(/:\d+$/, "")) return undefined;
  return { name: match[1], host: remoteHost };
}

/** The unique key of a remote account's name: `name@host`, which no local name's key can be. */
export function remoteKeyOf(name: string, host: string): string {
  return keyOf(`${name}@${host}`);
}

/**
 * How a path segment names an account (docs/http.md#account-paths): an existing account's id, else
 * a name.
 */
export function accountSelector(segment: string, host: string): { id?: bigint; nameKey?: string } {
  const name = localNameOf(segment, host);
  return { id: parseSnowflake(segment), nameKey: name === undefined ? undefined : keyOf(name) };
}
