// How deep a received activity's JSON may nest (docs/federation.md#signatures). An activity is a
// few levels deep (a Create, its Note, a tag, its icon); one nested tens of thousands deep costs
// nothing to send within the 1 MiB bound and overflowed the stack of what reads it (a 500). It is
// refused on its bytes, before anything parses it.

/** Deeper than any activity of the fediverse, far shallower than what overflows a stack. */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether the JSON text `bytes` nests objects and arrays deeper than `max` (strings skipped). */
export function nestsDeeperThan(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) depth--;
  }
  return false;
}
