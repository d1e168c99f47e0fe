// One load run with autocannon: 32 connections for a few seconds, as req/s, p50 and p99.
import fs from "node:fs";
import autocannon from "autocannon";

export interface Load {
  reqPerSec: number;
  p50: number;
  p99: number;
  errors: number;
}

export async function load(
  url: string,
  options: {
    token?: string;
    /** One token per connection, in turn, instead of `token`: many clients acting at once. */
    tokens?: string[];
    method?: "GET" | "POST";
    body?: string;
    duration?: number;
  } = {},
): Promise<Load> {
  let connection = 0;
  const result = await autocannon({
    url,
    connections: 32,
    duration: options.duration ?? 5,
    method: options.method ?? "GET",
    body: options.body,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body ? { "content-type": "application/json" } : {}),
    },
    setupClient: options.tokens
      ? (client) => {
          const token = options.tokens?.[connection++ % (options.tokens?.length ?? 1)];
          client.setHeaders({
            authorization: `Bearer ${token}`,
            ...(options.body ? { "content-type": "application/json" } : {}),
          });
        }
      : undefined,
  });
  return {
    reqPerSec: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/**
 * A process's CPU time so far (user and system), in µs, from /proc (Linux); NaN elsewhere, with
 * that of the processes it started (a server's streams' process). With `thread`, that thread's
 * alone (the process's own id: its main thread).
 */
export function cpuMicros(pid: number, thread?: number): number {
  const fields = procStat(pid, thread === undefined ? undefined : `/proc/${pid}/task/${thread}/stat`);
  // utime and stime, fields 14 and 15 of stat, in clock ticks of 10 ms.
  const own = fields ? (Number(fields[11]) + Number(fields[12])) * 10_000 : Number.NaN;
  if (thread !== undefined) return own;
  return childrenOf(pid).reduce((sum, child) => sum + cpuMicros(child), own);
}

/** The processes `pid` started that still run (Linux; none elsewhere). */
export function childrenOf(pid: number): number[] {
  try {
    const listed = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
    return listed ? listed.split(" ").map(Number) : [];
  } catch {
    return [];
  }
}

/**
 * CPU of the PostgreSQL instance whose backend is `backendPid`, in µs: its postmaster's, its live
 * processes', and what the postmaster has reaped of those that ended (cutime and cstime), so a
 * connection closed meanwhile neither drops out nor counts against the window.
 */
export function postgresCpuMicros(backendPid: number): number {
  // Fields 4 (ppid) and 14-17 (utime, stime, cutime, cstime) of stat, in clock ticks of 10 ms.
  const postmaster = Number(procStat(backendPid)?.[1]);
  const own = procStat(postmaster);
  if (!own) return Number.NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(Number(entry));
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10_000;
}

/** The fields of /proc/<pid>/stat after the command's name (field 3 first), or undefined (gone; not Linux). */
export function procStat(pid: number, file = `/proc/${pid}/stat`): string[] | undefined {
  try {
    return fs.readFileSync(file, "utf8").split(") ")[1].split(" ");
  } catch {
    return undefined;
  }
}

/** The middle of `values` (the upper one of an even count). */
export function medianOf(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

/** The run with the median req/s: runs of one thing taken in turns, the machine's drift halved. */
export function medianRun<T extends { reqPerSec: number }>(runs: readonly T[]): T {
  return [...runs].sort((a, b) => a.reqPerSec - b.reqPerSec)[Math.floor(runs.length / 2)];
}
