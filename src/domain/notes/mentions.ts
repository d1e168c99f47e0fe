// `@name` and `@name@<host>` in note content (docs/notes.md#mentions).
import { keyOf, localNameOf } from "../accounts/rules.ts";

const MENTION = /(?<![\p{L}\p{N}_@.-])@([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:@([A-Za-z0-9.-]+(?::\d+)?))?/gu;

/** Name keys of the local accounts that `content` mentions. */
export function mentionedNameKeys(content: string, host: string): string[] {
  const keys = new Set<string>();
  for (const match of content.matchAll(MENTION)) {
    const name = localNameOf(match[2] ? `@${match[1]}@${match[2]}` : match[1], host);
    if (name) keys.add(keyOf(name));
  }
  return [...keys];
}
