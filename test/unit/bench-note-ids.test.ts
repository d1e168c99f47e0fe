// The live bench counts every delivery by the note ids it finds in a stream's bytes
// (bench/live.ts noteIds): what it hears must be every id sent, however the reads cut them.
import { describe, expect, it } from "vitest";
import { noteIds } from "../../bench/live.ts";

/** A stream's bytes as the server frames them: note events, comments between. */
function framed(ids: string[], padding: (i: number) => number): Buffer {
  let text = ": subscribed\n\n";
  ids.forEach((id, i) => {
    text += `event: note\nid: ${id}\ndata: {"content":"${"x".repeat(padding(i))}"}\n\n`;
    if (i % 3 === 0) text += ": ping\n\n";
  });
  return Buffer.from(text);
}

/** `bytes` fed to noteIds in pieces of the given sizes, through one reused read buffer. */
function heardIn(bytes: Buffer, sizes: (i: number) => number): string[] {
  const heard: string[] = [];
  const feed = noteIds((id) => heard.push(id));
  const reused = Buffer.alloc(64 * 1024);
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = Math.min(sizes(i), bytes.length - at);
    bytes.copy(reused, 0, at, at + size);
    feed(reused.subarray(0, size));
    reused.fill(0);
    at += size;
  }
  return heard;
}

describe("the live bench's note ids", () => {
  const ids = Array.from({ length: 200 }, (_, i) => String(649271736923115520n + BigInt(i * 7919)));
  const bytes = framed(ids, (i) => (i * 37) % 500);

  it("are every id sent, in one read or a byte at a time", () => {
    expect(heardIn(bytes, () => bytes.length)).toEqual(ids);
    expect(heardIn(bytes, () => 1)).toEqual(ids);
  });

  it("are every id sent whatever the reads' sizes, small and large pieces mixed", () => {
    for (let seed = 1; seed < 300; seed++) {
      let state = seed;
      const next = () => {
        state = (state * 1103515245 + 12345) % 2 ** 31;
        return state;
      };
      const heard = heardIn(bytes, () => (next() % 2 ? 1 + (next() % 60) : 1 + (next() % 4000)));
      expect(heard).toEqual(ids);
    }
  });
});
