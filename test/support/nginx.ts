// The shipped nginx configuration (deploy/nginx.conf) in front of test servers: the same file,
// its upstreams and port replaced, run as a child process (not a daemon) with a prefix and temp
// folders of its own. Tests that need it are skipped, saying so, where nginx is not installed.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "./net.ts";
import { ROOT } from "./process.ts";

const BINARY = ["/usr/sbin/nginx", "nginx"].find((bin) => spawnSync(bin, ["-v"]).status === 0);

/** Whether nginx is installed (Debian's nginx-light is enough). */
export const nginxAvailable = BINARY !== undefined;

export interface TestNginx {
  port: number;
  /** nginx's error log, for a test's failure message. */
  errors(): string;
  stop(): Promise<void>;
}

/** deploy/nginx.conf, proxying to `upstreams` (host:port), on 127.0.0.1:`port`, its files under `prefix`. */
export function nginxConfig(upstreams: string[], port: number, prefix: string): string {
  const shipped = fs.readFileSync(path.join(ROOT, "deploy/nginx.conf"), "utf8");
  const servers = /upstream murmur \{[^}]*\}/;
  const listen = /listen 80;/;
  if (!servers.test(shipped) || !listen.test(shipped))
    throw new Error("deploy/nginx.conf: no upstream or listen to replace");
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((kind) => `  ${kind}_temp_path ${path.join(prefix, kind)};`)
    .join("\n");
  return shipped
    .replace(servers, `upstream murmur {\n${upstreams.map((u) => `    server ${u};`).join("\n")}\n  }`)
    .replace(listen, `listen 127.0.0.1:${port};`)
    .replace(/^http \{/m, `http {\n  access_log off;\n${temp}`);
}

export async function startNginx(upstreams: string[]): Promise<TestNginx> {
  if (!BINARY) throw new Error("nginx is not installed");
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-nginx-"));
  const port = await freePort();
  const conf = path.join(prefix, "nginx.conf");
  fs.writeFileSync(conf, nginxConfig(upstreams, port, prefix));
  const errorLog = path.join(prefix, "error.log");
  const child: ChildProcess = spawn(
    BINARY,
    [
      "-p",
      prefix,
      "-c",
      conf,
      "-e",
      errorLog,
      "-g",
      `daemon off; master_process off; pid ${path.join(prefix, "nginx.pid")};`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const errors = () => stderr + (fs.existsSync(errorLog) ? fs.readFileSync(errorLog, "utf8") : "");
  // Listening once a connection is taken.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${errors()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`nginx did not listen: ${errors()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    errors,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGQUIT");
        await once(child, "exit");
      }
      fs.rmSync(prefix, { recursive: true, force: true });
    },
  };
}
