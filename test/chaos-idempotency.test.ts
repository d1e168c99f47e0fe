// Faults (docs/faults.md#killed): a server SIGKILLed while it runs a request with an
// Idempotency-Key. The note's write is held mid-request (the test holds the lock on the author's
// row it waits for), the server is killed, a second server starts on the same database, and the
// retry with the same key gets an answer (a fresh attempt once the dead instance's lease expired),
// not 503 after 10 s for 24 hours; the dead server's statement, still waiting on the lock, is ended
// before, so exactly one note exists when the lock is let go.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionName } from "../src/db/instance-lease.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { holdOpen } from "./support/held-transaction.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { freshDatabase, startTestServer, type TestServer } from "./support/server.ts";

const TOKEN_SIGNING_KEY = randomBytes(32).toString("base64");
let setup: TestServer;
let alice: TestAccount;
let env: Record<string, string>;
const instances: Instance[] = [];

beforeAll(async () => {
  const url = await freshDatabase();
  // The account is made in process (its mail read from this server's outbox); the servers the
  // test kills are processes on the same database, with WORKER_ID set (no worker id lease: the
  // instance lease alone tells that one is gone) and a short instance lease.
  setup = await startTestServer({ TOKEN_SIGNING_KEY }, url);
  alice = await account(setup, "chaos_idem");
  env = { DATABASE_URL: url, TOKEN_SIGNING_KEY, INSTANCE_LEASE_SECONDS: "2", LOG_LEVEL: "warn" };
});

afterAll(async () => {
  await Promise.all(instances.map((instance) => instance.stop()));
  await setup?.close();
});

const db = () => setup.services.db;

function postNote(at: Instance, key: string, content: string) {
  return fetch(`${at.url}/notes`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${alice.token}`, "idempotency-key": key },
    body: JSON.stringify({ content }),
  });
}

/** The sessions named for `instanceId` (those of its server process), and whether each waits on a lock. */
async function sessionsOf(instanceId: string) {
  return db().$queryRaw<{ waiting: boolean }[]>`
    SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE application_name = ${sessionName(instanceId)}`;
}

describe("a server killed in the middle of a request with an Idempotency-Key", () => {
  it("leaves the key to a retry on another server, which runs it once", { timeout: 90_000 }, async () => {
    const first = await startInstance({ ...env, WORKER_ID: "2" });
    instances.push(first);
    const content = "the note a crash interrupted";
    const lock = await holdOpen(
      db(),
      (tx) => tx.$executeRaw`SELECT 1 FROM accounts WHERE id = ${BigInt(alice.id)} FOR UPDATE`,
    );
    let released = false;
    try {
      // Killed before it answers: the request only ever fails.
      postNote(first, "chaos-key", content).catch(() => {});
      // Mid-request: the key claimed by the first server, its note's statement waiting on the lock.
      let dead: string | null | undefined;
      const claimOf = () => db().idempotencyRecord.findFirst({ where: { key: "chaos-key" } });
      await expect.poll(async () => (dead = (await claimOf())?.claimedBy), { timeout: 20_000 }).toBeTypeOf("string");
      await expect
        .poll(async () => (await sessionsOf(dead as string)).some((session) => session.waiting), { timeout: 20_000 })
        .toBe(true);
      first.child.kill("SIGKILL");
      await new Promise((resolve) => first.child.once("exit", resolve));

      const second = await startInstance({ ...env, WORKER_ID: "3" });
      instances.push(second);
      const retry = postNote(second, "chaos-key", content);
      // The retry takes the claim over once the dead server's lease has expired (its sessions
      // ended first); then the lock is let go: were the dead server's statement still waiting on
      // it, it would commit a second note.
      await expect.poll(async () => (await claimOf())?.claimedBy, { timeout: 30_000 }).not.toBe(dead);
      await lock.commit();
      released = true;
      const answer = await retry;
      expect(answer.status).toBe(201);
      expect(answer.headers.get("idempotent-replayed")).toBeNull();
      const note = (await answer.json()) as { id: string; content: string };
      expect(note.content).toBe(content);

      // One note, the retry's, and a later retry gets its answer again.
      const notes = await db().note.findMany({ where: { authorId: BigInt(alice.id), content } });
      expect(notes.map((n) => String(n.id))).toEqual([note.id]);
      const again = await postNote(second, "chaos-key", content);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(((await again.json()) as { id: string }).id).toBe(note.id);
      const author = await db().account.findUniqueOrThrow({ where: { id: BigInt(alice.id) } });
      expect(author.notesCount).toBe(await db().note.count({ where: { authorId: BigInt(alice.id) } }));
    } finally {
      if (!released) await lock.commit();
    }
  });
});
