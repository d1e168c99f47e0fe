// Idempotency-Key (docs/protection.md#idempotency): the first answer for an (account or IP, key)
// pair is kept 24 h; a replay returns it without acting twice; the same key with another method,
// path or body is 409 IDEMPOTENCY_KEY_REUSED. A claim left unanswered by an instance that died is
// free again once that instance's lease has expired (test/chaos-idempotency.test.ts kills a real
// server for it).
import { createHash } from "node:crypto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteExpiredInstanceLeases, instanceLease, sessionName } from "../src/db/instance-lease.ts";
import {
  fingerprintOf,
  IDEMPOTENCY_SWEEP_LOCK,
  startIdempotencySweep,
  sweepIdempotencyRecords,
} from "../src/http/idempotency.ts";
import { createLogger } from "../src/log.ts";
import { expectError } from "./support/expect.ts";
import { account, PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import { holdOpen } from "./support/held-transaction.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "idem_alice");
  bob = await account(server, "idem_bob");
});
afterAll(() => server.close());

const notesOf = (who: TestAccount) => server.services.db.note.count({ where: { authorId: BigInt(who.id) } });
const post = (who: TestAccount, key: string, body: unknown, url = "/notes") =>
  server.request("POST", url, { token: who.token, body, headers: { "idempotency-key": key } });

describe("Idempotency-Key", () => {
  it("answers a replay with the first answer, without acting twice", async () => {
    const before = await notesOf(alice);
    const first = await post(alice, "k-replay", { content: "only once" });
    const again = await post(alice, "k-replay", { content: "only once" });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(await notesOf(alice)).toBe(before + 1);
  });

  it("replays an answer PostgreSQL wrote as JSON (a reaction's note) as the same note", async () => {
    const note = await post(alice, "k-note-to-react", { content: "react once" });
    const url = `/notes/${note.body.id}/reaction`;
    const first = await post(bob, "k-react", { emoji: "👍" }, url);
    const again = await post(bob, "k-react", { emoji: "👍" }, url);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: note.body.id, reaction_count: 1 });
    expect(again.status).toBe(200);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("refuses the same key with another body, path or method: 409 IDEMPOTENCY_KEY_REUSED", async () => {
    await post(alice, "k-reuse", { content: "first" });
    expectError(await post(alice, "k-reuse", { content: "second" }), 409, "IDEMPOTENCY_KEY_REUSED");
    expectError(await post(alice, "k-reuse", { title: "x" }, "/lists"), 409, "IDEMPOTENCY_KEY_REUSED");
    const patch = await server.request("PATCH", "/accounts/idem_alice", {
      token: alice.token,
      body: { content: "first" },
      headers: { "idempotency-key": "k-reuse" },
    });
    expectError(patch, 409, "IDEMPOTENCY_KEY_REUSED");
  });

  it("keeps keys apart per account", async () => {
    const a = await post(alice, "k-shared", { content: "alice's" });
    const b = await post(bob, "k-shared", { content: "bob's" });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("acts once for ten concurrent requests with one key", async () => {
    const before = await notesOf(bob);
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(bob, "k-race", { content: "raced" })));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await notesOf(bob)).toBe(before + 1);
  });

  it("keeps an error answer too, and replays it", async () => {
    const first = await post(alice, "k-error", { content: "x", visibility: "nobody" });
    expectError(first, 400, "INVALID_VISIBILITY");
    const again = await post(alice, "k-error", { content: "x", visibility: "nobody" });
    expectError(again, 400, "INVALID_VISIBILITY");
    expect(again.headers["idempotent-replayed"]).toBe("true");
  });

  it("keys anonymous requests by IP: a replayed registration makes one account", async () => {
    const body = { name: "idem_new", email: "idem_new@example.com", passphrase: PASSPHRASE, captcha_token: "ok" };
    const first = await server.request("POST", "/accounts", { body, headers: { "idempotency-key": "k-register" } });
    const again = await server.request("POST", "/accounts", { body, headers: { "idempotency-key": "k-register" } });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await server.services.db.account.count({ where: { nameKey: "idem_new" } })).toBe(1);
  });

  it("forgets a key after 24 hours", async () => {
    const before = await notesOf(alice);
    await post(alice, "k-old", { content: "yesterday" });
    await server.services.db.idempotencyRecord.updateMany({
      where: { key: "k-old" },
      data: { createdAt: new Date(Date.now() - 25 * 60 * 60 * 1000) },
    });
    const later = await post(alice, "k-old", { content: "yesterday" });
    expect(later.status).toBe(201);
    expect(later.headers["idempotent-replayed"]).toBeUndefined();
    expect(await notesOf(alice)).toBe(before + 2);
  });

  it("refuses a malformed key with INVALID_REQUEST", async () => {
    expectError(await post(alice, "has space", { content: "x" }), 400, "INVALID_REQUEST");
    expectError(await post(alice, "k".repeat(256), { content: "x" }), 400, "INVALID_REQUEST");
  });
});

describe("Idempotency-Key on hostile bodies", () => {
  const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;

  it("answers a body nested 100,000 deep as the same body without a key does, never 500", async () => {
    const send = (url: string, payload: string, key?: string) =>
      server.request("POST", url, {
        token: alice.token,
        payload,
        headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      });
    // No route takes an array for content (400); a member no route reads is ignored (201).
    const cases = [
      { url: "/notes", payload: `{"content":${deep}}`, status: 400 },
      { url: "/notes", payload: `{"content":"deep","extra":${deep}}`, status: 201 },
      {
        url: "/graphql",
        payload: `{"query":"mutation { createNote(input: { content: \\"deep\\" }) { __typename } }","variables":{"x":${deep}}}`,
        status: 200,
      },
    ];
    for (const [i, { url, payload, status }] of cases.entries()) {
      const plain = await send(url, payload);
      const keyed = await send(url, payload, `k-deep-${i}`);
      expect(plain.status).toBe(status);
      expect({ status: keyed.status, error: keyed.body.error }).toEqual({ status, error: plain.body.error });
    }
  });

  it("fingerprints a body as the SHA-256 of JSON.stringify's text, as before: keys kept stay valid", () => {
    const stringified = (body: unknown) =>
      createHash("sha256")
        .update(`POST /notes\n${JSON.stringify(body ?? null)}`)
        .digest("hex");
    fc.assert(fc.property(fc.jsonValue(), (body) => fingerprintOf("POST", "/notes", body) === stringified(body)));
    // An upload's: members left undefined, as JSON.stringify leaves them out (or null in arrays).
    for (const body of [{ fields: { name: "a" }, filename: undefined, file: "5e" }, [undefined, 1], undefined]) {
      expect(fingerprintOf("POST", "/notes", body)).toBe(stringified(body));
    }
  });
});

describe("an Idempotency-Key claim left by an instance that is gone", () => {
  const db = () => server.services.db;
  const claim = (who: TestAccount, key: string, body: unknown, claimedBy: string | null, createdAt = new Date()) =>
    db().idempotencyRecord.create({
      data: {
        owner: `account:${who.id}`,
        key,
        fingerprint: fingerprintOf("POST", "/notes", body),
        claimedBy,
        createdAt,
      },
    });
  const leaseOf = (instanceId: string, secondsLeft: number) =>
    db().instanceLease.create({ data: { instanceId, expiresAt: new Date(Date.now() + secondsLeft * 1000) } });

  it("is run afresh by a replay once that instance's lease has expired, instead of 503 for 24 hours", async () => {
    const body = { content: "left by a crash" };
    await leaseOf("crashed-1", -1);
    await claim(alice, "c-expired", body, "crashed-1");
    const before = await notesOf(alice);
    const retry = await post(alice, "c-expired", body);
    expect(retry.status).toBe(201);
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
    expect(await notesOf(alice)).toBe(before + 1);
    // Its answer is kept as a first answer is.
    const again = await post(alice, "c-expired", body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.body).toEqual(retry.body);
    expect(await notesOf(alice)).toBe(before + 1);
  });

  it("is free too when the instance has no lease at all, and from before claims named one once a lease old", async () => {
    await claim(alice, "c-unleased", { content: "unleased" }, "never-leased");
    expect((await post(alice, "c-unleased", { content: "unleased" })).status).toBe(201);
    const leaseMs = server.services.config.instanceLeaseSeconds * 1000;
    await claim(alice, "c-legacy", { content: "legacy" }, null, new Date(Date.now() - leaseMs - 1000));
    expect((await post(alice, "c-legacy", { content: "legacy" })).status).toBe(201);
  });

  it("has that instance's sessions ended first: what it left uncommitted never commits beside the fresh attempt", async () => {
    // The dead instance's session, in a transaction it will never finish, holding the lock on
    // bob's row that the note's counter update waits for.
    const dead = new pg.Client({ connectionString: server.databaseUrl, application_name: sessionName("crashed-2") });
    dead.on("error", () => {});
    await dead.connect();
    await dead.query("BEGIN");
    await dead.query("UPDATE accounts SET bio = 'the dead wrote this' WHERE id = $1", [bob.id]);
    const body = { content: "after the dead" };
    await claim(bob, "c-sessions", body, "crashed-2");
    const before = await notesOf(bob);
    expect((await post(bob, "c-sessions", body)).status).toBe(201);
    await expect(dead.query("COMMIT")).rejects.toThrow();
    await dead.end().catch(() => {});
    expect(await notesOf(bob)).toBe(before + 1);
    expect((await db().account.findUniqueOrThrow({ where: { id: BigInt(bob.id) } })).bio).not.toBe(
      "the dead wrote this",
    );
  });

  it("of a live instance still holds a replay until that instance answers", async () => {
    await leaseOf("alive-1", 60);
    const body = { content: "x", visibility: "nobody" };
    await claim(alice, "c-alive", body, "alive-1");
    const before = await notesOf(alice);
    const waiting = post(alice, "c-alive", body);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await db().idempotencyRecord.updateMany({
      where: { key: "c-alive", claimedBy: "alive-1" },
      data: { status: 400, headers: {}, body: JSON.stringify({ error: "INVALID_VISIBILITY" }) },
    });
    const replayed = await waiting;
    expectError(replayed, 400, "INVALID_VISIBILITY");
    expect(replayed.headers["idempotent-replayed"]).toBe("true");
    expect(await notesOf(alice)).toBe(before);
  });
});

describe("instance leases", () => {
  const rowOf = (instanceId: string) => server.services.db.instanceLease.findUnique({ where: { instanceId } });

  it("are taken at the first claim, renewed while the instance runs, deleted at its shutdown; expired ones swept", async () => {
    const lease = instanceLease(server.services.db, createLogger("silent"), "lease-test", 1);
    expect(await rowOf("lease-test")).toBeNull();
    await lease.held();
    const first = (await rowOf("lease-test"))?.expiresAt.getTime() ?? 0;
    expect(first).toBeGreaterThan(Date.now());
    await expect.poll(async () => (await rowOf("lease-test"))?.expiresAt.getTime()).toBeGreaterThan(first);
    await lease.release();
    expect(await rowOf("lease-test")).toBeNull();
    await server.services.db.instanceLease.create({
      data: { instanceId: "long-gone", expiresAt: new Date(Date.now() - 1000) },
    });
    await deleteExpiredInstanceLeases(server.services.db);
    expect(await rowOf("long-gone")).toBeNull();
  });
});

describe("Idempotency-Key on uploads", () => {
  const filesOf = (who: TestAccount) => server.services.db.driveFile.count({ where: { ownerId: BigInt(who.id) } });
  async function upload(who: TestAccount, key: string, bytes: Buffer, name = "pic.png") {
    const form = new FormData();
    form.set("name", name);
    form.set("file", new Blob([new Uint8Array(bytes)]), name);
    const encoded = new Response(form);
    const answer = await server.app.inject({
      method: "POST",
      url: "/drive",
      headers: {
        "content-type": encoded.headers.get("content-type") ?? "",
        authorization: `Bearer ${who.token}`,
        "idempotency-key": key,
      },
      payload: Buffer.from(await encoded.arrayBuffer()),
    });
    return { status: answer.statusCode, body: answer.json(), headers: answer.headers };
  }

  it("stores a replayed upload once, fingerprinted by its fields and the file's bytes", async () => {
    const png = await image("png", 16, 16);
    const before = await filesOf(alice);
    const first = await upload(alice, "u-replay", png);
    const again = await upload(alice, "u-replay", png);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(await filesOf(alice)).toBe(before + 1);
    // Other bytes, or another name, under the same key: 409.
    const other = await upload(alice, "u-replay", await image("png", 17, 16));
    expect({ status: other.status, body: other.body }).toEqual({
      status: 409,
      body: { error: "IDEMPOTENCY_KEY_REUSED" },
    });
    const renamed = await upload(alice, "u-replay", png, "other.png");
    expect(renamed.status).toBe(409);
    expect(await filesOf(alice)).toBe(before + 1);
    // Nothing of the refused or replayed uploads is left in the scratch folder.
    const fs = await import("node:fs");
    expect(fs.readdirSync(server.services.storage.scratchDir)).toEqual([]);
  });
});

describe("Idempotency-Key on GraphQL", () => {
  const mutation = (content: string) => ({
    query: `mutation { createNote(input: { content: ${JSON.stringify(content)} }) { __typename ... on MutationCreateNoteSuccess { data { id } } } }`,
  });
  const graphql = (who: TestAccount, key: string, body: unknown) =>
    server.request("POST", "/graphql", { token: who.token, body, headers: { "idempotency-key": key } });

  it("answers a replayed mutation with the first answer, without acting twice; another body is 409", async () => {
    const before = await notesOf(bob);
    const first = await graphql(bob, "g-replay", mutation("graphql once"));
    const again = await graphql(bob, "g-replay", mutation("graphql once"));
    expect(first.status).toBe(200);
    expect(first.body.data.createNote.data.id).toBeDefined();
    expect(again.body).toEqual(first.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(await notesOf(bob)).toBe(before + 1);
    expectError(await graphql(bob, "g-replay", mutation("graphql twice")), 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await notesOf(bob)).toBe(before + 1);
  });
});

describe("idempotency records past 24 hours", () => {
  const HOUR = 60 * 60 * 1000;
  const keep = async (owner: string, keys: string[], hoursAgo: number) => {
    await server.services.db.idempotencyRecord.createMany({
      data: keys.map((key) => ({ owner, key, fingerprint: "f", createdAt: new Date(Date.now() - hoursAgo * HOUR) })),
    });
  };
  const keysOf = async (owner: string) =>
    (await server.services.db.idempotencyRecord.findMany({ where: { owner }, orderBy: { key: "asc" } })).map(
      (r) => r.key,
    );

  it("are deleted in batches, the day's kept", async () => {
    await keep("ip:10.7.0.1", ["old-1", "old-2", "old-3", "old-4", "old-5"], 25);
    await keep("ip:10.7.0.1", ["fresh"], 23);
    expect(await sweepIdempotencyRecords(server.services.db, { batch: 2 })).toBe(5);
    expect(await keysOf("ip:10.7.0.1")).toEqual(["fresh"]);
  });

  it("are swept by one instance at a time: another's sweep leaves them to the one under way", async () => {
    await keep("ip:10.7.0.2", ["old"], 30);
    const other = await holdOpen(
      server.services.db,
      (tx) => tx.$executeRaw`SELECT pg_advisory_xact_lock(${IDEMPOTENCY_SWEEP_LOCK})`,
    );
    try {
      expect(await sweepIdempotencyRecords(server.services.db)).toBe(0);
      expect(await keysOf("ip:10.7.0.2")).toEqual(["old"]);
    } finally {
      await other.commit();
    }
    expect(await sweepIdempotencyRecords(server.services.db)).toBe(1);
  });

  it("are swept periodically by a running server", async () => {
    await keep("ip:10.7.0.3", ["old"], 48);
    const sweep = startIdempotencySweep(
      { db: server.services.db, log: createLogger("silent") },
      { firstAfterMs: 0, everyMs: 50 },
    );
    try {
      await expect.poll(() => keysOf("ip:10.7.0.3")).toEqual([]);
    } finally {
      await sweep.stop();
    }
  });
});
