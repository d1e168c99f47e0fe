// Runs Murmur's own entry points as child processes, as an operator would.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../..");

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `input`: written to its standard input, then closed (else it reads nothing, as from /dev/null). */
export function start(
  script: string,
  args: string[],
  env: Record<string, string>,
  options: { input?: string } = {},
): ChildProcess {
  const { DATABASE_URL: _, ...base } = process.env;
  // As `npm start` and the `murmur` bin run it: compiled (dist/, which the global setup has made
  // current before any test file starts), one node process, no wrapper between. Through tsx's
  // loader each process compiled the whole server again, about a second of CPU a start.
  const compiled = script.replace(/^src\/(.*)\.ts$/, "dist/$1.js");
  const child = spawn(process.execPath, [path.join(ROOT, compiled), ...args], {
    cwd: ROOT,
    env: { ...base, LOG_LEVEL: "warn", ...env },
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  child.stdin?.end(options.input);
  return child;
}

export async function run(
  script: string,
  args: string[],
  env: Record<string, string>,
  options: { input?: string } = {},
): Promise<Run> {
  const child = start(script, args, env, options);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  // "close": once its output is read whole ("exit" may come before the last of it).
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stdout, stderr };
}
