// The operator's view of federation (docs/federation.md#delivery) and follows whose Accept was lost
// (docs/federation.md#follows). A Murmur server on 127.0.0.2 delivers to a peer on 127.0.0.3 whose
// accounts sign what they send (test/support/signing-peer.ts) and to a dead server on 127.0.0.4
// (nothing listens): `murmur instance list` and listInstances show per host the last success, the
// failures, what is queued and the moderators' policy; /metrics shows the queues, the deliveries by
// outcome and the inbox activities by type and result. A follow request whose Accept never came is
// sent again (a new Follow, a new id) when due, once however many processes look, and `murmur
// follow repair` sends Undo(Follow) and a new Follow.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { remoteKeyOf } from "../src/domain/accounts/rules.ts";
import { setInstancePolicy } from "../src/domain/instances/policies.ts";
import { listInstances } from "../src/domain/instances/status.ts";
import { resendLostFollows } from "../src/federation/follow-repair.ts";
import { cast } from "./support/cast.ts";
import { closeFederating, freePort, type ListeningServer, listening } from "./support/federation.ts";
import type { TestAccount } from "./support/fixtures.ts";
import { run } from "./support/process.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { SigningPeer } from "./support/signing-peer.ts";

const WAIT = { timeout: 20_000, interval: 50 };

let a: ListeningServer;
let alice: TestAccount;
let peer: SigningPeer;
let deadHost: string;
let env: Record<string, string>;

beforeAll(async () => {
  peer = new SigningPeer("127.0.0.3");
  await peer.start();
  peer.serve("carol", "all");
  peer.serve("bob", "all-but-first");
  peer.serve("dave", "none");
  peer.serve("erin", "all-but-first");
  // A delivery that failed waits a minute for its retry: it stays queued while the test looks.
  a = await listening("127.0.0.2", { env: { FEDERATION_RETRY_MS: "60000" } });
  ({ alice } = await cast(a, { alice: "alice" }));
  deadHost = `127.0.0.4:${await freePort("127.0.0.4")}`;
  env = {
    DATABASE_URL: a.databaseUrl,
    DATA_DIR: a.dataDir,
    PUBLIC_URL: a.url,
    FEDERATION_ALLOW_PRIVATE: "true",
  };
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await closeFederating(a);
});

async function follow(who: TestAccount, handle: string) {
  const answer = await a.request("POST", `/accounts/${handle}/follow`, { token: who.token, body: {} });
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
}

async function following(who: TestAccount): Promise<string[]> {
  const answer = await a.request("GET", `/accounts/${who.name}/following`, { token: who.token });
  expect(answer.status).toBe(200);
  return (answer.body as { name: string }[]).map((account) => account.name).sort();
}

/** The pending request of alice to `name` of the peer, as the database has it. */
async function request(name: string) {
  const target = await a.services.db.account.findUnique({ where: { nameKey: remoteKeyOf(name, peer.host) } });
  if (!target) return null;
  return a.services.db.followRequest.findUnique({
    where: { requesterId_targetId: { requesterId: BigInt(alice.id), targetId: target.id } },
  });
}

/** Moves alice's request to `name` back in time, as if its Follow had gone `hours` ago. */
async function age(name: string, hours: number): Promise<void> {
  const target = await a.services.db.account.findUniqueOrThrow({ where: { nameKey: remoteKeyOf(name, peer.host) } });
  await a.services.db.$executeRaw`
    UPDATE follow_requests SET sent_at = now() - make_interval(hours => ${hours})
    WHERE requester_id = ${BigInt(alice.id)} AND target_id = ${target.id}`;
}

async function metrics(): Promise<string> {
  const answer = await a.request("GET", "/metrics");
  expect(answer.status).toBe(200);
  return answer.body as string;
}

/** The value of a metric's line with exactly these labels, or undefined. */
function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, v]) => `${key}="${v}"`)
    .join(",");
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${wanted}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("the operator's view", () => {
  it("shows per host the last success, the failures, what is queued and the policy, in listInstances and `murmur instance list`", async () => {
    await follow(alice, `@carol@${peer.host}`);
    await expect.poll(() => following(alice), WAIT).toEqual([`@carol@${peer.host}`]);
    // An account of a server that is gone: its Follow fails, and is queued for a retry.
    const id = a.services.ids.next();
    await a.services.db.account.create({
      data: {
        id,
        name: "ghost",
        nameKey: remoteKeyOf("ghost", deadHost),
        nickname: "ghost",
        host: deadHost,
        uri: `http://${deadHost}/users/ghost`,
        inboxUrl: `http://${deadHost}/users/ghost/inbox`,
        sharedInboxUrl: `http://${deadHost}/inbox`,
        email: `remote-${id}@remote.invalid`,
        emailKey: `remote-${id}@remote.invalid`,
        passphraseHash: "",
        fetchedAt: new Date(),
      },
    });
    await follow(alice, `@ghost@${deadHost}`);
    await setInstancePolicy(a.services, "127.0.0.4", "silence");
    await setInstancePolicy(a.services, "blocked.example", "block");

    await expect
      .poll(async () => (await listInstances(a.services)).find((row) => row.host === deadHost)?.failures, WAIT)
      .toBeGreaterThan(0);
    await expect
      .poll(async () => (await listInstances(a.services)).find((row) => row.host === peer.host)?.lastSuccessAt, WAIT)
      .toBeInstanceOf(Date);
    const rows = await listInstances(a.services);
    const byHost = new Map(rows.map((row) => [row.host, row]));
    expect(byHost.get(peer.host)).toMatchObject({ policy: null, failures: 0, lastFailureAt: null, queued: 0 });
    expect(byHost.get(deadHost)).toMatchObject({ policy: "silence", lastSuccessAt: null, queued: 1 });
    expect(byHost.get(deadHost)?.lastError).toMatch(/failed: ECONNREFUSED/);
    expect(byHost.get("blocked.example")).toMatchObject({ policy: "block", queued: 0, failures: 0 });
    // A page after a host.
    expect((await listInstances(a.services, { after: deadHost })).map((row) => row.host)).not.toContain(deadHost);

    const cli = await run("src/cli/main.ts", ["instance", "list"], env);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    const lines = new Map(
      cli.stdout
        .trim()
        .split("\n")
        .map((line) => [line.split("\t")[0], line.split("\t")]),
    );
    expect(lines.get(peer.host)?.slice(1, 6)).toEqual([
      "-",
      byHost.get(peer.host)?.lastSuccessAt?.toISOString(),
      "-",
      "0",
      "0",
    ]);
    const dead = lines.get(deadHost);
    expect(dead?.[1]).toBe("silence");
    expect(dead?.[2]).toBe("-");
    expect(Number(dead?.[4])).toBeGreaterThan(0);
    expect(dead?.[5]).toBe("1");
    expect(lines.get("blocked.example")?.[1]).toBe("block");
  });

  it("/metrics: the queues by kind, the deliveries by outcome, the inbox activities by type and result", async () => {
    // Refused at the inbox: unsigned (Fedify), and signed with a key of a blocked server (the gate).
    const unsigned = await a.request("POST", "/inbox", {
      headers: { "content-type": "application/activity+json" },
      payload: JSON.stringify({
        "@context": "https://www.w3.org/ns/activitystreams",
        id: `${peer.url}/unsigned/1`,
        type: "Follow",
        actor: peer.actor("carol"),
        object: `${a.url}/accounts/${alice.id}`,
      }),
    });
    expect(unsigned.status).toBe(401);
    const blocked = await a.request("POST", "/inbox", {
      headers: {
        "content-type": "application/activity+json",
        signature:
          'keyId="https://blocked.example/users/x#main-key",algorithm="rsa-sha256",headers="date",signature="AA=="',
      },
      payload: "{}",
    });
    expect(blocked.status).toBe(403);

    const text = await metrics();
    // The ghost's Follow, waiting for its retry; carol's was delivered, and her Accept taken in.
    expect(value(text, "murmur_federation_queue_depth", { kind: "outbox" })).toBeGreaterThanOrEqual(1);
    expect(value(text, "murmur_federation_queue_oldest_seconds", { kind: "outbox" })).toBeGreaterThan(0);
    expect(value(text, "murmur_federation_queue_depth", { kind: "federation_outbox" })).toBe(0);
    expect(value(text, "murmur_federation_queue_depth", { kind: "fanout" })).toBe(0);
    expect(value(text, "murmur_federation_deliveries_total", { outcome: "delivered" })).toBeGreaterThanOrEqual(1);
    expect(value(text, "murmur_federation_deliveries_total", { outcome: "retried" })).toBeGreaterThanOrEqual(1);
    expect(value(text, "murmur_federation_deliveries_total", { outcome: "permanent_failure" })).toBe(0);
    expect(
      value(text, "murmur_federation_inbox_activities_total", { type: "Accept", result: "accepted", reason: "" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(text, "murmur_federation_inbox_activities_total", { type: "Accept", result: "handled", reason: "" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(text, "murmur_federation_inbox_activities_total", {
        type: "unknown",
        result: "refused",
        reason: "unsigned",
      }),
    ).toBe(1);
    expect(
      value(text, "murmur_federation_inbox_activities_total", {
        type: "unknown",
        result: "refused",
        reason: "blocked",
      }),
    ).toBe(1);
  });

  it("counts a 410 as a permanent failure, and the host's record keeps why", async () => {
    const gone = http.createServer((_request, response) => response.writeHead(410).end());
    const port = await freePort("127.0.0.5");
    await new Promise<void>((resolve) => gone.listen(port, "127.0.0.5", resolve));
    try {
      const host = `127.0.0.5:${port}`;
      const id = a.services.ids.next();
      await a.services.db.account.create({
        data: {
          id,
          name: "left",
          nameKey: remoteKeyOf("left", host),
          nickname: "left",
          host,
          uri: `http://${host}/users/left`,
          inboxUrl: `http://${host}/users/left/inbox`,
          email: `remote-${id}@remote.invalid`,
          emailKey: `remote-${id}@remote.invalid`,
          passphraseHash: "",
          fetchedAt: new Date(),
        },
      });
      await follow(alice, `@left@${host}`);
      await expect
        .poll(async () => (await listInstances(a.services)).find((row) => row.host === host)?.lastError, WAIT)
        .toBe("HTTP 410");
      await expect
        .poll(
          async () => value(await metrics(), "murmur_federation_deliveries_total", { outcome: "permanent_failure" }),
          WAIT,
        )
        .toBe(1);
      expect((await listInstances(a.services)).find((row) => row.host === host)?.queued).toBe(0);
    } finally {
      gone.closeAllConnections();
      await new Promise((resolve) => gone.close(resolve));
    }
  });
});

describe("a follow whose Accept was lost", () => {
  it("is sent again as a new Follow once due, and the peer's Accept of it makes it a follow", async () => {
    await follow(alice, `@bob@${peer.host}`);
    await expect.poll(() => peer.received("Follow", "bob").length, WAIT).toBe(1);
    const first = peer.received("Follow", "bob")[0].id;
    expect((await request("bob"))?.activityUri).toBe(first);
    // Not due within the hour: nothing is sent.
    expect(await resendLostFollows(a.services)).toBe(0);

    await age("bob", 2);
    // The relay's next pass sends it again (every 5 s).
    await expect.poll(() => following(alice), WAIT).toContain(`@bob@${peer.host}`);
    const follows = peer.received("Follow", "bob");
    expect(follows).toHaveLength(2);
    expect(follows[1].id).not.toBe(first);
    expect(peer.accepts.filter((accept) => accept.follow === follows[1].id)).toEqual([
      { follow: follows[1].id, status: 202 },
    ]);
    expect(await request("bob")).toBeNull();
  });

  it("is sent again after 1 h, 6 h and 24 h, then left alone", async () => {
    await follow(alice, `@dave@${peer.host}`);
    await expect.poll(() => peer.received("Follow", "dave").length, WAIT).toBe(1);
    for (const [hours, resends] of [
      [2, 1],
      [7, 2],
      [25, 3],
    ]) {
      await age("dave", hours);
      // A pass now rather than the relay's next (the test before shows the relay's).
      await resendLostFollows(a.services);
      await expect.poll(async () => (await request("dave"))?.resends, WAIT).toBe(resends);
      await expect.poll(() => peer.received("Follow", "dave").length, WAIT).toBe(resends + 1);
      // Sent again just now: not due again yet, even an hour later.
      if (resends < 3) {
        await age("dave", 2);
        expect(await resendLostFollows(a.services)).toBe(0);
      }
    }
    await age("dave", 24 * 30);
    expect(await resendLostFollows(a.services)).toBe(0);
    const ids = peer.received("Follow", "dave").map((follow) => follow.id);
    expect(new Set(ids).size).toBe(4);
    expect((await request("dave"))?.activityUri).toBe(ids[3]);
  });

  it("is sent again once however many processes of the fleet look at once", async () => {
    // A second process on the same database, the same server to the world.
    const b: TestServer = await startTestServer(
      { PUBLIC_URL: a.url, FEDERATION_ALLOW_PRIVATE: "true", WORKER_ID: "2" },
      a.databaseUrl,
    );
    try {
      const names = Array.from({ length: 12 }, (_, i) => `many${i}`);
      for (const name of names) {
        peer.serve(name, "none");
        await follow(alice, `@${name}@${peer.host}`);
      }
      await expect
        .poll(() => names.map((name) => peer.received("Follow", name).length), WAIT)
        .toEqual(names.map(() => 1));
      for (const name of names) await age(name, 2);
      // Both processes' own passes, and two more at once on each: every request is claimed by one.
      const sent = await Promise.all([
        resendLostFollows(a.services),
        resendLostFollows(b.services),
        resendLostFollows(a.services),
        resendLostFollows(b.services),
      ]);
      expect(sent.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(names.length);
      await expect
        .poll(() => names.map((name) => peer.received("Follow", name).length), WAIT)
        .toEqual(names.map(() => 2));
      for (const name of names) expect((await request(name))?.resends).toBe(1);
    } finally {
      await b.close().catch(() => {});
    }
  });

  it("`murmur follow repair` sends Undo(Follow) and a new Follow, for a request and for a follow", async () => {
    await follow(alice, `@erin@${peer.host}`);
    await expect.poll(() => peer.received("Follow", "erin").length, WAIT).toBe(1);
    const first = peer.received("Follow", "erin")[0].id;
    const repaired = await run("src/cli/main.ts", ["follow", "repair", "alice", `@erin@${peer.host}`], env);
    expect(repaired.stderr).toBe("");
    expect(repaired.code).toBe(0);
    const [kind, newId] = repaired.stdout.trim().split("\t");
    expect(kind).toBe("request");
    await expect.poll(() => following(alice), WAIT).toContain(`@erin@${peer.host}`);
    const undo = peer.received("Undo", "erin");
    expect(undo).toHaveLength(1);
    expect(undo[0].object.id).toBe(first);
    expect(peer.received("Follow", "erin").map((f) => f.id)).toEqual([first, newId]);
    // The Undo reached the peer before the new Follow: one sender's activities keep their order.
    const order = peer.posts.map((post) => post.activity?.id);
    expect(order.indexOf(undo[0].id)).toBeLessThan(order.indexOf(newId));

    // carol's server is told of her follow again; here it stays a follow.
    const again = await run("src/cli/main.ts", ["follow", "repair", "alice", `@carol@${peer.host}`], env);
    expect(again.code).toBe(0);
    expect(again.stdout.split("\t")[0]).toBe("follow");
    await expect.poll(() => peer.received("Undo", "carol").length, WAIT).toBe(1);
    await expect.poll(() => peer.received("Follow", "carol").length, WAIT).toBe(2);
    expect(await following(alice)).toContain(`@carol@${peer.host}`);

    const nobody = await run("src/cli/main.ts", ["follow", "repair", "alice", `@nobody@${peer.host}`], env);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/no remote account/);
  });
});
