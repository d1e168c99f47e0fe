// Faults (docs/faults.md#worker-ids): a database (DATABASE_URL, someone else's) out of reach for
// longer than the snowflake worker id's lease. The instance keeps running: it mints no id meanwhile
// (another instance may take its expired id), writes answer 503 and /readyz says why, and once the
// database answers again it leases a worker id again by itself and writes go through. The
// PostgreSQL is this file's own, which the test stops and starts.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { createDb, type Db } from "../src/db/client.ts";
import { SnowflakeGenerator } from "../src/db/snowflake.ts";
import { leaseWorkerId } from "../src/db/worker-lease.ts";
import { DomainError } from "../src/domain/errors.ts";
import { createLogger } from "../src/log.ts";
import { mailedToken, PASSPHRASE } from "./support/fixtures.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { type OwnCluster, startOwnCluster } from "./support/own-cluster.ts";
import { call as remote } from "./support/remote.ts";

let own: OwnCluster;
let db: Db | undefined;
let instance: Instance | undefined;

beforeAll(async () => {
  own = await startOwnCluster("lease-outage");
}, 60_000);

afterAll(async () => {
  await instance?.stop("SIGKILL");
  await db?.$disconnect();
  await own?.remove();
});

async function until(what: string, done: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Line {
  level: number;
  msg: string;
}

describe("the database out of reach for longer than the worker id's lease", () => {
  it("stops minting ids (without ending the process) and mints again once the database answers", async () => {
    const lines: Line[] = [];
    const captured = new Writable({
      write(chunk, _encoding, done) {
        for (const text of chunk.toString().split("\n")) if (text) lines.push(JSON.parse(text));
        done();
      },
    });
    db = createDb(own.url, () => {});
    const lease = await leaseWorkerId(db, createLogger("info", captured), 1);
    const ids = new SnowflakeGenerator(lease.current);
    const workerId = lease.workerId;
    const before = ids.next();

    await own.cluster.stop();
    try {
      await until("the lease is lost", () => lease.current() === undefined);
      // Some renewals later, still refused: it waits rather than ends the process.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(lease.current()).toBeUndefined();
      expect(ids.available()).toBe(false);
      expect(() => ids.next()).toThrow(DomainError);
      try {
        ids.next();
      } catch (err) {
        expect((err as DomainError).code).toBe("SERVICE_UNAVAILABLE");
      }
    } finally {
      await own.cluster.start();
    }
    await until("a worker id is held again", () => lease.current() !== undefined);
    // No other instance took it meanwhile: its own id again.
    expect(lease.current()).toBe(workerId);
    const after = ids.next();
    expect(after).toBeGreaterThan(before);
    expect(Number((after >> 12n) & 0x3ffn)).toBe(workerId);
    const [row] = await db.$queryRaw<{ live: boolean }[]>`
      SELECT expires_at > now() AS live FROM worker_leases WHERE worker_id = ${workerId}`;
    expect(row.live).toBe(true);

    // One line when the renewals start failing, one when the lease is lost, one when it is held again.
    const said = lines.filter((line) => line.level >= 30).map((line) => line.msg);
    expect(said).toEqual([
      "the snowflake worker id's lease not renewed; retrying, quietly until it works again",
      `worker id ${workerId}'s lease expired before it could be renewed: no ids are minted (writes answer 503) until a worker id is leased again`,
      `holding worker id ${workerId} again: ids are minted again`,
    ]);
    await lease.release();
    await db.$disconnect();
    db = undefined;
  }, 60_000);

  it("a server keeps running, answers 503 and says why in /readyz, and accepts notes again once it is back", async () => {
    // No WORKER_ID: the server leases one, for 2 s.
    instance = await startInstance({
      DATABASE_URL: own.url,
      WORKER_LEASE_SECONDS: "2",
      LOG_LEVEL: "info",
    });
    const server = instance;
    onTestFailed(() => {
      console.log(server.output());
    });
    const call = (method: string, url: string, body?: unknown, token?: string) =>
      remote(server, method, url, body, token);
    const email = "lease@example.com";
    const credentials = { name: "lease", passphrase: PASSPHRASE, captcha_token: "ok" };
    expect((await call("POST", "/accounts", { ...credentials, email })).status).toBe(200);
    const verified = await call("POST", "/accounts/lease/verify_email", { token: await mailedToken(server, email) });
    expect(verified.status).toBe(204);
    const token = (await call("POST", "/login", credentials)).body.authorization_token as string;
    expect((await call("POST", "/notes", { content: "before" }, token)).status).toBe(201);

    const lost = () => server.output().includes("lease expired before it could be renewed");
    await own.cluster.stop();
    try {
      await until("the server says its lease is lost", lost);
      // Said once each: the renewals failing, the lease lost.
      const said = server
        .output()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line).msg as string)
        .filter((msg) => /^(the snowflake )?worker id/.test(msg));
      expect(said).toEqual([
        "the snowflake worker id's lease not renewed; retrying, quietly until it works again",
        expect.stringMatching(/^worker id \d+'s lease expired before it could be renewed: no ids are minted/),
      ]);
      const note = await call("POST", "/notes", { content: "during" }, token);
      expect(note.status).toBe(503);
      expect(note.body).toEqual({ error: "SERVICE_UNAVAILABLE" });
      expect(note.headers.get("retry-after")).toBe("1");
      const ready = await call("GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        error: "SERVICE_UNAVAILABLE",
        checks: { database: "down", storage: "up", ids: "down" },
      });
      // Well past its lease, still there.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(server.child.exitCode).toBeNull();
    } finally {
      await own.cluster.start();
    }
    let after = { status: 0, body: undefined as { id?: string } | undefined };
    await until("a note is accepted again", async () => {
      after = await call("POST", "/notes", { content: "after" }, token);
      expect([201, 503]).toContain(after.status);
      return after.status === 201;
    });
    expect((await call("GET", `/notes/${after.body?.id}`, undefined, token)).status).toBe(200);
    expect((await call("GET", "/readyz")).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
    expect(server.output()).toMatch(/holding worker id \d+ again: ids are minted again/);
  }, 90_000);
});
