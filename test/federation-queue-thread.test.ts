// FEDERATION_QUEUE=thread (docs/running.md#federation-worker): the federation queue worked by a
// worker thread of the server process (src/federation/queue-thread.ts), not by the thread that
// answers requests. A follow of a remote account goes out through the queue (the outbox relay and
// the delivery) and its Accept comes back through it (an inbox POST handled from the queue): both
// done by the thread, whose claims name it, and counted in the server's GET /metrics; the server's
// close ends the thread.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { closeFederating, type ListeningServer, listening } from "./support/federation.ts";
import { account } from "./support/fixtures.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const WAIT = { timeout: 30_000, interval: 50 };

let server: ListeningServer;
let peer: SigningPeer;

beforeAll(async () => {
  peer = new SigningPeer("127.0.0.3");
  await peer.start();
  peer.serve("bob", "all");
  // The thread leases a snowflake worker id of its own: WORKER_ID unset.
  server = await listening("127.0.0.2", { env: { FEDERATION_QUEUE: "thread", WORKER_ID: "" } });
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await closeFederating(server);
});

describe("the federation queue in a worker thread", () => {
  it("delivers a follow and handles its Accept, each message claimed by the thread", async () => {
    const alice = await account(server, "alice");
    // The Follow's POST waits for its answer meanwhile: its message is held by its claim.
    peer.delayMs = 1_000;
    const answer = await server.request("POST", `/accounts/@bob@${peer.host}/follow`, {
      token: alice.token,
      body: {},
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body).toEqual({ pending: true });
    const claims = () =>
      server.services.db.$queryRaw<{ claimed_by: string }[]>`
        SELECT claimed_by FROM federation_messages WHERE claimed_by IS NOT NULL`;
    await expect.poll(async () => (await claims()).length, WAIT).toBeGreaterThan(0);
    // src/federation/message-queue.ts names a claim by its worker: a thread's with its thread id.
    for (const { claimed_by } of await claims()) expect(claimed_by).toMatch(`:${process.pid}:thread`);
    peer.delayMs = 0;

    await expect.poll(() => peer.received("Follow", "bob").length, WAIT).toBe(1);
    await expect.poll(() => peer.accepts.map((accept) => accept.status), WAIT).toEqual([202]);
    // The Accept, handled from the queue: the follow is no longer pending.
    await expect
      .poll(async () => {
        const listed = await server.request("GET", "/accounts/alice/following", { token: alice.token });
        return (listed.body as { name: string }[]).map((followed) => followed.name);
      }, WAIT)
      .toEqual([`@bob@${peer.host}`]);
    // Counted by the thread, answered by the server's thread: a count is posted once its handler
    // returns, which may be a moment after the follow it wrote is read.
    const metrics = async () => (await server.request("GET", "/metrics")).body as string;
    await expect.poll(metrics, WAIT).toMatch(/murmur_federation_deliveries_total\{outcome="delivered"\} [1-9]/);
    await expect
      .poll(metrics, WAIT)
      .toMatch(/murmur_federation_inbox_activities_total\{type="Accept",result="handled",reason=""\} 1/);
  });

  it("is refused with WORKER_ID set: the thread mints ids with a worker id of its own", () => {
    expect(() => loadConfig({ FEDERATION_QUEUE: "thread", WORKER_ID: "3" })).toThrow(
      "FEDERATION_QUEUE=thread needs WORKER_ID unset",
    );
  });
});
