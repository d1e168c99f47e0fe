// Faults (docs/faults.md#database): what an outage writes to the log. A refusal the server expects
// (the database out of reach: REST's and GraphQL's 503, /readyz's) is said once per cause when it
// starts and once when it ends, not once per request with a stack trace; GraphQL's errors are
// logged with their message and stack, not as `{"0":{}}`. The server runs on a PostgreSQL of this
// file's own, which the test stops and starts.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { type OwnCluster, startOwnCluster } from "./support/own-cluster.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

interface Line {
  level: number;
  msg?: string;
  err?: { message?: string; stack?: string };
  [key: string]: unknown;
}

const lines: Line[] = [];
const captured = new Writable({
  write(chunk, _encoding, done) {
    for (const text of chunk.toString().split("\n")) if (text) lines.push(JSON.parse(text));
    done();
  },
});

let own: OwnCluster;
let server: TestServer;
let alice: TestAccount;

beforeAll(async () => {
  own = await startOwnCluster("outage-log");
  server = await startTestServer({}, own.url, createLogger("info", captured));
  alice = await account(server, "alice");
}, 60_000);

afterAll(async () => {
  await server?.close();
  await own?.remove();
});

/** What a request's access log says (Fastify's two lines): not what this test counts. */
const ACCESS = new Set(["incoming request", "request completed"]);

const graphql = async (query: string) => {
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: { "content-type": "application/json", authorization: `Bearer ${alice.token}` },
    payload: JSON.stringify({ query }),
  });
  return answer.statusCode;
};

describe("an outage in the log", () => {
  it("is one line per cause when it starts and one when it ends, not one per refused request", async () => {
    const round = () =>
      Promise.all([
        server.request("GET", "/timeline/home", { token: alice.token }).then((a) => a.status),
        server.request("POST", "/notes", { token: alice.token, body: { content: "during" } }).then((a) => a.status),
        server.request("GET", "/readyz").then((a) => a.status),
        graphql('{ account(name: "alice") { ... on QueryAccountSuccess { data { name } } } }'),
        // A timeline page, answered by its compiled plan once answered by the executor.
        graphql("{ homeTimeline { ... on NoteConnection { edges { node { id content } } } } }"),
      ]);
    expect(await round()).toEqual([200, 201, 200, 200, 200]);

    const before = lines.length;
    await own.cluster.stop();
    let refused = 0;
    for (let i = 0; i < 30; i++) {
      const statuses = await round();
      expect(statuses).toEqual([503, 503, 503, 503, 503]);
      refused += statuses.length;
    }
    await own.cluster.start();
    const deadline = Date.now() + 30_000;
    while ((await round()).some((status) => status >= 500) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await round()).toEqual([200, 201, 200, 200, 200]);

    const said = lines.slice(before).filter((line) => !ACCESS.has(line.msg ?? ""));
    const summary = said.map((line) => `${line.level} ${line.msg} (${line.err?.message?.split("\n")[0] ?? ""})`);
    const shown = summary.join("\n");
    console.log(`outage log: ${refused} requests refused; ${said.length} lines besides the access log:\n${shown}`);
    // Each cause once as it starts, once as it ends: the requests' database, readiness, and each
    // LISTEN connection's.
    expect(new Set(summary).size, shown).toBe(summary.length);
    const causes = new Set(
      said.map((line) => (line.msg ?? "").replace(/; retrying, quietly until it works again$|: works again$/, "")),
    );
    expect(said.length, shown).toBeLessThanOrEqual(2 * causes.size);
    // Six LISTEN connections, the requests' database and readiness: 16 lines at most, for 150 refusals.
    expect(said.length, shown).toBeLessThan(refused / 5);
    const outage = said.filter((line) => /database is out of reach/.test(line.msg ?? ""));
    expect(outage.map((line) => line.level)).toEqual([50, 30]);
    expect(outage[0].err?.stack, shown).toBeTruthy();
    const unready = said.filter((line) => /not ready/.test(line.msg ?? ""));
    expect(unready.map((line) => line.level)).toEqual([40, 30]);
    // Every line says what it is: no GraphQL error written as `{"0":{}}`.
    expect(said.filter((line) => !line.msg || "0" in line)).toEqual([]);
  }, 90_000);
});
