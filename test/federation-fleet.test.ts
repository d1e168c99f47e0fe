// An instance killed mid-batch (docs/federation.md#delivery): two Murmur processes on one database
// work the federation queue together, delivering 200 Follows (20 senders, 10 accounts each) to a
// slow server (each POST answered 100 ms after it came, test/support/signing-peer.ts; an activity
// has arrived when its POST was answered 2xx, all its sender can know). One is killed with SIGKILL
// while the batch is under way. Every activity arrives, and any that arrives twice is one that was
// in flight at the kill: claimed by the killed process and not yet done (answered, but not yet
// deleted from the queue), handled again once its claim lapsed (the queue is at least once:
// docs/federation.md#delivery). So there are never more duplicates than deliveries in flight at
// that moment: at most twice the killed process's concurrency (it claims the next ones while
// some run, and writes dones with its next claim). A POST cut by the kill is not answered,
// and is sent again: a queue that let go of a message before its POST was answered loses it.
//
// The follows are written by a process that only enqueues (FEDERATION_QUEUE=off) and serves the
// senders' keys; the two workers (src/main.ts, as an operator runs them) start once all 200 wait.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const SENDERS = 20;
const RECIPIENTS = 10;
/** What the killed process held waits this long (FEDERATION_QUEUE_LEASE_MS) before the survivor takes it. */
const LEASE_MS = 3_000;
const WAIT = { timeout: 60_000, interval: 100 };

let web: ListeningServer;
let peer: SigningPeer;
const workers: Instance[] = [];

beforeAll(async () => {
  peer = new SigningPeer("127.0.0.3");
  await peer.start();
  peer.delayMs = 100;
  for (let i = 0; i < RECIPIENTS; i++) peer.serve(`r${i}`, "none");
  web = await listening("127.0.0.2", { env: { FEDERATION_QUEUE: "off" } });
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await peer?.stop();
  await closeFederating(web);
});

async function left(): Promise<number> {
  const [row] = await web.services.db.$queryRaw<{ n: number }[]>`
    SELECT ((SELECT count(*) FROM federation_messages) + (SELECT count(*) FROM federation_outbox))::int AS n`;
  return row.n;
}

describe("a fleet's delivery with an instance killed mid-batch", () => {
  it("gets every activity to the slow server; only those in flight at the kill arrive twice", async () => {
    const senders: TestAccount[] = [];
    for (let i = 0; i < SENDERS; i++) senders.push(await account(web, `s${i}`));
    for (const sender of senders) {
      for (let r = 0; r < RECIPIENTS; r++) {
        const answer = await web.request("POST", `/accounts/@r${r}@${peer.host}/follow`, {
          token: sender.token,
          body: {},
        });
        expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
      }
    }
    const sent = new Set(
      (await web.services.db.followRequest.findMany({ select: { activityUri: true } })).map((r) => r.activityUri),
    );
    expect(sent.size).toBe(SENDERS * RECIPIENTS);
    expect(await left()).toBe(SENDERS * RECIPIENTS);

    const env = {
      DATABASE_URL: web.databaseUrl,
      PUBLIC_URL: web.url,
      FEDERATION_ALLOW_PRIVATE: "true",
      FEDERATION_QUEUE_LEASE_MS: String(LEASE_MS),
      // As many deliveries to the one slow server at once as the queue has workers.
      FEDERATION_HOST_CONCURRENCY: "4",
      LOG_LEVEL: "warn",
    };
    workers.push(...(await Promise.all([startInstance(env), startInstance(env)])));
    const [killed, survivor] = workers;

    const follows = () => peer.answered.filter((id) => sent.has(id));
    await expect.poll(() => follows().length, WAIT).toBeGreaterThanOrEqual(40);
    await killed.stop("SIGKILL");
    const arrivedBefore = follows().length;
    // What the killed process held: claimed under its pid (src/federation/message-queue.ts's worker).
    const held = await web.services.db.$queryRaw<{ id: string }[]>`
      SELECT message->>'activityId' AS id FROM federation_messages
      WHERE message->>'type' = 'outbox' AND claimed_by LIKE ${`%:${killed.child.pid}:%`}`;
    const inFlight = new Set(held.map((row) => row.id));
    expect(arrivedBefore, "the kill came mid-batch").toBeLessThan(SENDERS * RECIPIENTS);

    await expect.poll(() => new Set(follows()).size, WAIT).toBe(sent.size);
    await expect.poll(left, WAIT).toBe(0);
    expect(survivor.child.exitCode).toBeNull();

    const ids = follows();
    // None lost: each activity written arrived, and nothing else did.
    expect(new Set(ids)).toEqual(sent);
    expect(peer.answered.length).toBe(ids.length);
    // POSTs the kill cut before their answer: sent again.
    const cut = peer.posts.length - peer.answered.length;
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    const twice = [...counts].filter(([, n]) => n > 1);
    // Each duplicate was in flight at the kill, and came at most once more.
    for (const [id, n] of twice) {
      expect(inFlight.has(id), `${id} arrived ${n} times`).toBe(true);
      expect(n).toBe(2);
    }
    expect(twice.length).toBeLessThanOrEqual(inFlight.size);
    // A process runs 4 deliveries at once (src/federation/mount.ts; more only for received
    // activities) and holds at most twice that under its claim: those running, those claimed to
    // run next, and those handled whose done its next claim writes.
    expect(inFlight.size).toBeLessThanOrEqual(8);
    console.log(
      `federation fleet: ${sent.size} activities, ${arrivedBefore} arrived before the kill, ` +
        `${inFlight.size} in flight at it, ${cut} POSTs cut by it, ${twice.length} arrived twice, none lost`,
    );
  }, 180_000);
});
