// `@name` and `@name@<host>` in note content (docs/notes.md#mentions; another server's names,
// docs/federation.md#notes).
import { keyOf, localNameOf, remoteKeyOf, remoteNameOf } from "../accounts/rules.ts";

const MENTION = /(?<![\p{L}\p{N}_@.-])@([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:@([A-Za-z0-9.-]+(?::\d+)?))?/gu;

/**
 * At most this many other servers' names in one note are resolved (each may cost a WebFinger
 * request and an actor fetch while the post waits, docs/federation.md#notes); the rest stay text.
 */
export const MAX_REMOTE_MENTIONS = 20;

/** A name in a note's text: where it is, as written, and its account's name key. */
export interface Mention {
  index: number;
  text: string;
  name: string;
  /** Another server's host (lower-cased), undefined for a local name. */
  host?: string;
  nameKey: string;
}

/** The names `content` mentions, in order; another server's after the first MAX_REMOTE_MENTIONS distinct ones are left out. */
export function mentionsIn(content: string, localHost: string): Mention[] {
  const found: Mention[] = [];
  const remoteKeys = new Set<string>();
  for (const match of content.matchAll(MENTION)) {
    // A sentence's full stop after a host is no part of it.
    const hostText = match[2]?.replace(/\.+$/, "");
    const text = hostText ? `@${match[1]}@${hostText}` : `@${match[1]}`;
    const local = localNameOf(hostText ? text : match[1], localHost);
    if (local) {
      found.push({ index: match.index, text, name: local, nameKey: keyOf(local) });
      continue;
    }
    const remote = hostText ? remoteNameOf(text, localHost) : undefined;
    if (!remote) continue;
    const nameKey = remoteKeyOf(remote.name, remote.host);
    if (!remoteKeys.has(nameKey)) {
      if (remoteKeys.size === MAX_REMOTE_MENTIONS) continue;
      remoteKeys.add(nameKey);
    }
    found.push({ index: match.index, text, name: remote.name, host: remote.host, nameKey });
  }
  return found;
}

/** Name keys of the local accounts that `content` mentions. */
export function mentionedNameKeys(content: string, host: string): string[] {
  return [...new Set(mentionsIn(content, host).flatMap((m) => (m.host ? [] : [m.nameKey])))];
}

/** Other servers' names `content` mentions (`@name@host`), each once, at most MAX_REMOTE_MENTIONS. */
export function remoteMentions(content: string, host: string): { name: string; host: string }[] {
  const byKey = new Map<string, { name: string; host: string }>();
  for (const m of mentionsIn(content, host)) if (m.host) byKey.set(m.nameKey, { name: m.name, host: m.host });
  return [...byKey.values()];
}
