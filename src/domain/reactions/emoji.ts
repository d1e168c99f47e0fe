// What a reaction may be (docs/notes.md#reactions): exactly one RGI emoji, by the Unicode property
// of the regex engine (ZWJ sequences, flags, skin tones and keycaps count as one), or `<:alias:id>`
// of an existing custom emoji.
import type { Services } from "../context.ts";
import { DomainError } from "../errors.ts";

const ONE_RGI_EMOJI = /^\p{RGI_Emoji}$/v;
const CUSTOM = /^<:([A-Za-z0-9_]{2,64}):([0-9]{1,20})>$/;

/**
 * Emoji ONE_RGI_EMOJI accepted lately: the regex (every RGI sequence as an alternative) costs
 * ~30 µs a test, a twentieth of a reaction's CPU on a note taking many (bench/README.md "Writes"),
 * and a note's reactions are mostly a few emoji.
 */
const accepted = new Set<string>();
const ACCEPTED_MAX = 1_000;

/** The emoji as stored; EMOJI_NOT_FOUND for anything else. */
export async function checkReactionEmoji(services: Services, emoji: string): Promise<string> {
  if (accepted.has(emoji)) return emoji;
  if (ONE_RGI_EMOJI.test(emoji)) {
    if (accepted.size >= ACCEPTED_MAX) accepted.clear();
    accepted.add(emoji);
    return emoji;
  }
  const custom = CUSTOM.exec(emoji);
  if (custom) {
    const found = await services.db.customEmoji.count({ where: { alias: custom[1], id: BigInt(custom[2]) } });
    if (found) return emoji;
  }
  throw new DomainError("EMOJI_NOT_FOUND");
}
