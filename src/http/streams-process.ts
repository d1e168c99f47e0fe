// Live streams in a process of their own (docs/live.md#process). Each stream's events are socket
// writes, 100,000 a second for 2,000 streams at 50 notes/s, and in the process that answers the
// other requests they held its one thread while those waited: the global timeline beside them made
// 0.34-0.36x of its requests a second alone. A stream's request is handed, socket and all, to a
// child process running the same server, which answers it as this one would (refusals included);
// this one's thread then only answers the rest: 0.41-0.58x, 0.52x in a full run, where the
// deliveries' CPU (their write system calls) is what remains (bench/README.md, "Live streams in a
// process of their own"). The child runs at a higher priority when the system allows it, as its
// work is short and waited for: under a saturated machine the same as ours made its delivery p99
// 278-314 ms, at nice -10 147 ms (and now -15: bench/README.md, "Live reads 80 ms apart").
//
// Handed at the request, not the connection: a keep-alive connection may carry other requests
// first. The child's HTTP server reads the request again from its head, rebuilt from what this
// one parsed (a GET: there is no body). Until the child says it is ready, and while it is being
// started again after it died, streams are answered here.
import { type ChildProcess, fork } from "node:child_process";
import type { IncomingMessage, Server } from "node:http";
import { Socket } from "node:net";
import { setPriority } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";

/** Set in the child's environment: the process serves the streams handed to it. */
export const STREAMS_CHILD_ENV = "MURMUR_STREAMS_CHILD";

/** A stream's path, at / or under /v0 (src/rest/mount.ts's PREFIXES: src/http does not import src/rest). */
const STREAM_PATH = /^(?:\/v0)?\/streaming\//;
/** The wait before a child that ended is started again, doubled while none gets ready. */
const RESTART_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const STOP_MS = 20_000;

type FromChild = { ready: true } | { open: number } | { took: number };
type ToChild = { head: string; id: number };
/** Requests handed to a child, by number: the socket to close once it took one, else how to serve it here. */
type Handed = Map<number, { socket: Socket; here: () => void }>;

export interface StreamsProcess {
  /**
   * Hands `request` to the child when it opens a stream (a GET) and the child is ready; else
   * false. Should the child not take it (it died before, unknown to this process yet), `here`
   * serves it in this process after all.
   */
  take(request: IncomingMessage, here: () => void): boolean;
  /** Streams open in the child (for /metrics). */
  readonly open: number;
  stop(): Promise<void>;
}

/** The server's own entry point, compiled or not, as this process runs it. */
const ENTRY = fileURLToPath(new URL(`../main${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export function startStreamsProcess(env: NodeJS.ProcessEnv, nice: number, log: Logger): StreamsProcess {
  /** The child now, with what was handed to it and not yet taken. */
  let child: { process: ChildProcess; handed: Handed } | undefined;
  let ready = false;
  let open = 0;
  let stopping = false;
  let restartMs = RESTART_MS;
  let numbered = 0;
  const spawn = () => {
    if (stopping) return;
    const started = fork(ENTRY, [], { env: { ...env, [STREAMS_CHILD_ENV]: "1" } });
    // Requests sent to it, by number, until it says it took them (then this process's copy of the
    // socket is closed). A child killed a moment before a hand-over still accepted it into its
    // channel, never to read it: with that copy closed at once, the client saw its connection
    // closed unanswered. What it did not take is served here once it has ended.
    const sent: Handed = new Map();
    child = { process: started, handed: sent };
    if (nice && started.pid !== undefined) {
      try {
        setPriority(started.pid, nice);
      } catch (err) {
        log.info(
          `the streams process runs at this one's priority (nice ${nice} refused: ${(err as Error).message}); ` +
            "under a saturated CPU its deliveries wait longer (docs/live.md#process)",
        );
      }
    }
    started.on("message", (message: FromChild) => {
      if ("took" in message) {
        sent.get(message.took)?.socket.destroy();
        sent.delete(message.took);
      } else if ("open" in message) open = message.open;
      else {
        ready = true;
        restartMs = RESTART_MS;
        log.info(`the streams process (pid ${started.pid}) serves the live streams`);
      }
    });
    const serveUntaken = () => {
      const untaken = [...sent.values()];
      sent.clear();
      for (const { here } of untaken) here();
    };
    started.on("exit", (code, signal) => {
      ready = false;
      open = 0;
      // What it did not take is served here, once what it said before it ended has been read
      // (its channel is read in the same turn of the loop as its exit, or the next). Not at the
      // channel's 'disconnect': Node holds that back while a sent handle waits for the child's
      // acknowledgement, which a dead child never sends.
      setTimeout(serveUntaken, 100);
      if (stopping) return;
      log.error(
        `the streams process ended (${signal ?? `code ${code}`}): streams are served here until it is back ` +
          `(started again in ${restartMs / 1000} s)`,
      );
      setTimeout(spawn, restartMs).unref();
      restartMs = Math.min(restartMs * 2, RESTART_MAX_MS);
    });
  };
  spawn();
  return {
    take(request, here) {
      if (!ready || !child?.process.connected || request.method !== "GET" || !STREAM_PATH.test(request.url ?? ""))
        return false;
      const socket = request.socket;
      const raw = request.rawHeaders;
      let head = `${request.method} ${request.url} HTTP/${request.httpVersion}\r\n`;
      for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
      // Its handle, not the socket: sent as a server's socket, Node counts it among the server's
      // connections held by that child, and once every such child had ended the server's close
      // never finished (shutdown timed out). Kept open until the child has taken it, then
      // closed here: the child holds the connection. Not sent, it is this process's again.
      const id = ++numbered;
      const sent = child.handed;
      sent.set(id, { socket, here });
      const message: ToChild = { head: `${head}\r\n`, id };
      const { _handle: handle } = socket as unknown as { _handle: never };
      child.process.send(message, handle, { keepOpen: true }, (err) => {
        if (!err || !sent.delete(id)) return;
        ready = false;
        here();
      });
      return true;
    },
    get open() {
      return open;
    },
    async stop() {
      stopping = true;
      const running = child?.process;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGTERM");
      const late = setTimeout(() => running.kill("SIGKILL"), STOP_MS);
      await exited;
      clearTimeout(late);
    },
  };
}

/**
 * In the child: serves each socket handed to it on `server` (not listening), and tells the
 * parent it is ready and how many streams it holds.
 */
export function serveHandedStreams(server: Server, openStreams: () => number): () => void {
  // Each connection ends with its one request here (a refusal too): the client's next request
  // on it would otherwise be answered here, not by the server it connected to.
  server.maxRequestsPerSocket = 1;
  process.on("message", (message: ToChild, handle?: unknown) => {
    if (!handle) return;
    const socket = new Socket({ handle: handle as never, readable: true, writable: true });
    server.emit("connection", socket);
    socket.emit("data", Buffer.from(message.head, "latin1"));
    socket.resume();
    process.send?.({ took: message.id } satisfies FromChild);
  });
  let told = -1;
  const tell = setInterval(() => {
    const open = openStreams();
    if (open !== told && process.connected) process.send?.({ open } satisfies FromChild);
    told = open;
  }, 1_000);
  tell.unref();
  process.send?.({ ready: true } satisfies FromChild);
  return () => clearInterval(tell);
}
