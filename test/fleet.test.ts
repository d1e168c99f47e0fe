// Three Murmur processes as a fleet (docs/fleet.md#instances), as an operator runs them: one
// PostgreSQL with a streaming read replica, one Redis, one S3 bucket (s3rver), one token key,
// each instance its own DATA_DIR and no WORKER_ID. Each step of a scenario goes to another
// instance: register on A, verify on B, log in on C; upload on A, download on B and C; react on B,
// see it on C; freeze on A, refused on B at once; an Idempotency-Key replayed across instances;
// rate limits counted together; notes created through all three at once with distinct ids under
// three leased worker ids. At the end each instance says where its reads went: the replica's share.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailedToken } from "./support/fixtures.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { image } from "./support/media.ts";
import { run } from "./support/process.ts";
import { redisAvailable, startRedis, type TestRedis } from "./support/redis.ts";
import { type ReplicatedDatabase, startReplicatedDatabase } from "./support/replica.ts";
import { startTestS3, type TestS3 } from "./support/s3.ts";

let s3: TestS3;
let redis: TestRedis | undefined;
let database: ReplicatedDatabase;
let env: Record<string, string>;
let a: Instance;
let b: Instance;
let c: Instance;
const PASSPHRASE = "correct-horse-battery";

beforeAll(async () => {
  if (!redisAvailable) console.warn("redis-server is not installed: the fleet test runs without Redis");
  [s3, database, redis] = await Promise.all([
    startTestS3(),
    startReplicatedDatabase(0),
    redisAvailable ? startRedis() : undefined,
  ]);
  env = {
    ...s3.env,
    DATABASE_URL: database.primaryUrl,
    DATABASE_REPLICA_URL: database.replicaUrl,
    ...(redis ? { REDIS_URL: redis.url } : {}),
    TOKEN_SIGNING_KEY: randomBytes(32).toString("base64"),
    // Limits on, small enough to reach (registration: 2 an IP; logins: 10), counted in Redis.
    RATE_LIMIT_MULTIPLIER: redis ? "0.4" : "0",
    LOG_LEVEL: "info",
  };
  [a, b, c] = await Promise.all([startInstance(env), startInstance(env), startInstance(env)]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
  await Promise.all([s3?.close(), redis?.stop(), database?.stop()]);
});

async function call(at: Instance, method: string, url: string, body?: unknown, token?: string, key?: string) {
  const response = await fetch(`${at.url}${url}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(key ? { "idempotency-key": key } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

let user: { id: string; token: string };
let moderator: string;

describe("three instances as one server", () => {
  it("register on A, verify on B, log in on C", async () => {
    const email = "fleet@example.com";
    const registered = await call(a, "POST", "/accounts", {
      name: "fleet",
      email,
      passphrase: PASSPHRASE,
      captcha_token: "ok",
    });
    expect(registered.status).toBe(200);
    expect(
      (await call(b, "POST", "/accounts/fleet/verify_email", { token: await mailedToken([a, b, c], email) })).status,
    ).toBe(204);
    const login = await call(c, "POST", "/login", { name: "fleet", passphrase: PASSPHRASE, captcha_token: "ok" });
    expect(login.status).toBe(200);
    user = { id: registered.body.id, token: login.body.authorization_token };
    // Read back at once on the other two (each reads the primary until the replica has the login).
    for (const at of [a, b]) expect((await call(at, "GET", "/accounts/fleet", undefined, user.token)).status).toBe(200);
  }, 30_000);

  it("upload on A; the file whole, a range and its thumbnail on B and C", async () => {
    const png = await image("png", 64, 48);
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(png)]), "fleet.png");
    const uploaded = await fetch(`${a.url}/drive`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}` },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    const file = (await uploaded.json()) as { id: string };
    for (const at of [b, c]) {
      const whole = await fetch(`${at.url}/files/${file.id}`);
      expect(whole.status).toBe(200);
      expect(Buffer.from(await whole.arrayBuffer()).equals(png)).toBe(true);
      const part = await fetch(`${at.url}/files/${file.id}`, { headers: { range: "bytes=0-7" } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(png.subarray(0, 8))).toBe(true);
      const thumbnail = await fetch(`${at.url}/files/${file.id}/thumbnail`);
      expect([thumbnail.status, thumbnail.headers.get("content-type")]).toEqual([200, "image/webp"]);
    }
  }, 30_000);

  it("react on B, seen on C", async () => {
    const note = await call(a, "POST", "/notes", { content: "from A" }, user.token);
    expect(note.status).toBe(201);
    expect((await call(b, "POST", `/notes/${note.body.id}/reaction`, { emoji: "👍" }, user.token)).status).toBe(200);
    const seen = await call(c, "GET", `/notes/${note.body.id}`, undefined, user.token);
    expect(seen.body.reaction_count).toBe(1);
    expect(seen.body.reactions).toEqual([{ emoji: "👍", reacted_by: user.id }]);
  }, 30_000);

  it("an Idempotency-Key: the replay on B answers A's note, another body with it is 409", async () => {
    const key = randomBytes(8).toString("hex");
    const first = await call(a, "POST", "/notes", { content: "once" }, user.token, key);
    const again = await call(b, "POST", "/notes", { content: "once" }, user.token, key);
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await call(c, "POST", "/notes", { content: "twice" }, user.token, key);
    expect([other.status, other.body]).toEqual([409, { error: "IDEMPOTENCY_KEY_REUSED" }]);
  }, 30_000);

  it("notes created through all three at once: distinct ids, minted under three leased worker ids", async () => {
    const created = await Promise.all(
      Array.from({ length: 90 }, (_, i) =>
        call([a, b, c][i % 3], "POST", "/notes", { content: `burst ${i}` }, user.token),
      ),
    );
    expect(created.map((n) => n.status)).toEqual(created.map(() => 201));
    const ids = created.map((n) => BigInt(n.body.id));
    expect(new Set(ids).size).toBe(90);
    expect(new Set(ids.map((id) => (id >> 12n) & 1023n)).size).toBe(3);
  }, 30_000);

  it("a freeze on A is refused on B at once, and lifted on C, at once on A", async () => {
    const mod = await call(b, "POST", "/accounts", {
      name: "fleetmod",
      email: "fleetmod@example.com",
      passphrase: PASSPHRASE,
      captcha_token: "ok",
    });
    expect(mod.status).toBe(200);
    expect(
      (
        await call(c, "POST", "/accounts/fleetmod/verify_email", {
          token: await mailedToken([a, b, c], "fleetmod@example.com"),
        })
      ).status,
    ).toBe(204);
    expect((await run("src/cli/main.ts", ["role", "fleetmod", "moderator"], env)).code).toBe(0);
    moderator = (await call(a, "POST", "/login", { name: "fleetmod", passphrase: PASSPHRASE, captcha_token: "ok" }))
      .body.authorization_token;
    for (let round = 0; round < 10; round++) {
      const [freezeAt, readAt, liftAt] = [
        [a, b, c],
        [b, c, a],
        [c, a, b],
      ][round % 3];
      expect((await call(freezeAt, "PUT", "/accounts/fleet/freeze", {}, moderator)).status).toBe(204);
      const refused = await call(readAt, "GET", "/timeline/home", undefined, user.token);
      expect([refused.status, refused.body]).toEqual([403, { error: "YOU_ARE_FROZEN" }]);
      expect((await call(liftAt, "DELETE", "/accounts/fleet/freeze", undefined, moderator)).status).toBe(204);
      expect((await call(freezeAt, "GET", "/timeline/home", undefined, user.token)).status).toBe(200);
    }
  }, 60_000);

  it.skipIf(!redisAvailable)(
    "rate limits are counted together: a third registration from one IP is refused wherever it goes",
    async () => {
      // Two registrations (fleet on A, fleetmod on B) were this IP's allowance: C refuses the third.
      const third = await call(c, "POST", "/accounts", {
        name: "fleet3",
        email: "fleet3@example.com",
        passphrase: PASSPHRASE,
        captcha_token: "ok",
      });
      expect([third.status, third.body]).toEqual([429, { error: "RATE_LIMITED" }]);
      const ready = await call(a, "GET", "/readyz");
      expect(ready.body.checks).toMatchObject({ redis: "up", replicas: [{ status: "up" }] });
    },
    30_000,
  );

  it("reads that may lag went to the replica once it had each caller's writes", async () => {
    const reads = { primary: 0, replica: 0 };
    for (const at of [a, b, c]) {
      await at.stop();
      // Said by the instance and by its streams' process, each of its own reads.
      for (const line of at
        .output()
        .split("\n")
        .filter((l) => l.includes("reads that may lag"))) {
        const counted = JSON.parse(line) as { primary?: number; replica?: number };
        reads.primary += counted.primary ?? 0;
        reads.replica += counted.replica ?? 0;
      }
    }
    const share = reads.replica / (reads.primary + reads.replica);
    console.log(
      `fleet: ${reads.replica} of ${reads.primary + reads.replica} reads that may lag went to the replica (${Math.round(share * 100)}%)`,
    );
    expect(reads.replica).toBeGreaterThan(0);
  }, 60_000);
});
