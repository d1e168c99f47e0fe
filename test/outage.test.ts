// Faults (docs/faults.md#database): the database stopped under load. While it is down every request
// is answered at once with 503 SERVICE_UNAVAILABLE and Retry-After (never a 500, never a hang);
// when it comes back on the same address the server recovers by itself, with no restart, and every
// note it acknowledged with 201 is there. The server runs on a PostgreSQL of this file's own, which
// the test stops and starts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount } from "./support/fixtures.ts";
import { type OwnCluster, startOwnCluster } from "./support/own-cluster.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

let own: OwnCluster;
let server: TestServer;
let alice: TestAccount;

beforeAll(async () => {
  own = await startOwnCluster("outage");
  server = await startTestServer({}, own.url);
  alice = await account(server, "alice");
}, 60_000);

afterAll(async () => {
  await server?.close();
  await own?.remove();
});

interface Outcome {
  at: number;
  ms: number;
  answer: Answer;
}

describe("the database stopped under load", () => {
  it("answers 503 with Retry-After at once while it is down, and recovers without a restart", async () => {
    const first = await server.request("POST", "/notes", { token: alice.token, body: { content: "before" } });
    expect(first.status).toBe(201);
    const reader = first.body.id as string;

    const outcomes: Outcome[] = [];
    const acknowledged: string[] = [];
    let stop = false;
    // 16 clients: half write notes, half read one note and the home timeline.
    const clients = Array.from({ length: 16 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        const at = Date.now();
        const answer =
          c % 2 === 0
            ? await server.request("POST", "/notes", { token: alice.token, body: { content: `load ${c}-${i}` } })
            : await server.request("GET", i % 2 ? `/notes/${reader}` : "/timeline/home", { token: alice.token });
        outcomes.push({ at, ms: Date.now() - at, answer });
        if (answer.status === 201) acknowledged.push(answer.body.id as string);
        if (answer.status === 503) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });

    await new Promise((resolve) => setTimeout(resolve, 500));
    const stoppedAt = Date.now();
    await own.cluster.stop();
    const downAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const restartAt = Date.now();
    await own.cluster.start();
    const upAt = Date.now();
    // Recovery: a success after the restart, for readers and writers alike.
    const deadline = Date.now() + 30_000;
    const recovered = (status: number) => outcomes.some((o) => o.at >= upAt && o.answer.status === status);
    while (!(recovered(200) && recovered(201)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const recoveredAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop = true;
    await Promise.all(clients);

    // Nothing but success or the documented 503 at any time.
    const odd = outcomes.filter((o) => ![200, 201, 503].includes(o.answer.status));
    expect(odd.map((o) => [o.answer.status, o.answer.body])).toEqual([]);
    const unavailable = outcomes.filter((o) => o.answer.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    for (const o of unavailable) {
      expect(o.answer.body).toEqual({ error: "SERVICE_UNAVAILABLE" });
      expect(o.answer.headers["retry-after"]).toBe("1");
    }
    // While down, answers come at once (a refused connection), not after a connect timeout.
    const whileDown = outcomes.filter((o) => o.at >= downAt && o.at + o.ms <= restartAt);
    expect(whileDown.length).toBeGreaterThan(0);
    expect(whileDown.every((o) => o.answer.status === 503)).toBe(true);
    const slowest = Math.max(...whileDown.map((o) => o.ms));
    expect(slowest).toBeLessThan(1000);
    expect(recovered(200) && recovered(201)).toBe(true);

    // Every acknowledged note is there, whole.
    for (const id of acknowledged) {
      const note = await server.request("GET", `/notes/${id}`, { token: alice.token });
      expect(note.status, id).toBe(200);
      expect(note.body.content).toMatch(/^load \d+-\d+$/);
    }
    const counted = await server.services.db.account.findUniqueOrThrow({ where: { id: BigInt(alice.id) } });
    const rows = await server.services.db.note.count({ where: { authorId: BigInt(alice.id) } });
    expect(counted.notesCount).toBe(rows);

    const firstDown = unavailable.find((o) => o.at + o.ms >= stoppedAt);
    console.log(
      `chaos: database stopped under load (16 clients, ${outcomes.length} requests): ` +
        `${unavailable.length} answered 503 + Retry-After, ${odd.length} otherwise failed; ` +
        `first 503 ${firstDown ? firstDown.at + firstDown.ms - stoppedAt : "-"} ms after the stop began, ` +
        `slowest answer while down ${slowest} ms; stop took ${downAt - stoppedAt} ms, ` +
        `recovered ${recoveredAt - upAt} ms after PostgreSQL was back; ${acknowledged.length} acknowledged notes all present`,
    );
  }, 90_000);
});
