// A passphrase for an operator command: typed on a terminal without echo (twice), or read from
// standard input when it is piped. Never an argument: arguments are seen by every user of the
// machine (ps, /proc/<pid>/cmdline) and kept in shell histories.
import { text } from "node:stream/consumers";

export class PassphraseInputError extends Error {}

export async function readPassphrase(): Promise<string> {
  if (!process.stdin.isTTY) {
    // The first line: `echo "$PASSPHRASE" | murmur ...` ends it with a line break.
    const [line] = (await text(process.stdin)).split(/\r?\n/);
    if (!line) throw new PassphraseInputError("no passphrase: type it on a terminal, or pipe it on standard input");
    return line;
  }
  const first = await askHidden("passphrase: ");
  const again = await askHidden("again: ");
  if (first !== again) throw new PassphraseInputError("the two passphrases differ");
  return first;
}

/** One line typed on the terminal, not shown; Ctrl-C or Ctrl-D on an empty line gives up. */
function askHidden(prompt: string): Promise<string> {
  const input = process.stdin;
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.setEncoding("utf8");
  input.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const finish = (outcome: () => void) => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write("\n");
      outcome();
    };
    const onData = (chunk: string) => {
      for (const key of chunk) {
        if (key === "\r" || key === "\n") return finish(() => resolve(typed));
        if (key === "\u0003" || (key === "\u0004" && typed === "")) {
          return finish(() => reject(new PassphraseInputError("no passphrase given")));
        }
        if (key === "\u007f" || key === "\b") typed = [...typed].slice(0, -1).join("");
        else typed += key;
      }
    };
    input.on("data", onData);
  });
}
