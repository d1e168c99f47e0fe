// Overload (docs/protection.md#overload): past MAX_IN_FLIGHT requests in flight, the server answers
// 503 SERVICE_UNAVAILABLE with Retry-After at once, and serves again when the load falls. A GraphQL
// operation over WebSocket is a request in flight too, until it has run.
import net from "node:net";
import { PassThrough } from "node:stream";
import { createClient } from "graphql-ws";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { directAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let address: string;
beforeAll(async () => {
  server = await startTestServer({ MAX_IN_FLIGHT: "2" });
  address = await server.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(() => server.close());

describe("overload", () => {
  it("refuses requests past the bound with 503 and Retry-After, then recovers", async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => server.request("GET", "/timeline/global")));
    const refused = answers.filter((a) => a.status === 503);
    const served = answers.filter((a) => a.status === 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length + refused.length).toBe(20);
    for (const answer of refused) {
      expect(answer.body).toEqual({ error: "SERVICE_UNAVAILABLE" });
      expect(answer.headers["retry-after"]).toBe("1");
    }
    // The load gone, every request is served again.
    for (let i = 0; i < 5; i++) expect((await server.request("GET", "/timeline/global")).status).toBe(200);
  });
});

describe("a request whose client leaves before its answer", () => {
  it("leaves the count of requests in flight (its body read whole, it was never aborted as Node counts it)", async () => {
    const alice = await directAccount(server, "ov_leaver");
    const { hostname, port } = new URL(address);
    // The author's row held, so that each post waits in the database with its body read whole.
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE", [alice.id]);
      const body = JSON.stringify({ content: "left behind" });
      const sockets = Array.from({ length: 3 }, () =>
        net.connect(Number(port), hostname, function (this: net.Socket) {
          this.write(
            `POST /notes HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${alice.token}\r\n` +
              `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
        }),
      );
      // Until the first waits on the row (its statement sent, so its body was read; the others
      // queue behind it in the server, one account's posts going one at a time).
      for (let tries = 0; tries < 500; tries++) {
        const { rows } = await holder.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
        );
        if (rows[0].n >= 1) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    // The three posts finish without anyone to answer; the server then serves as before (MAX_IN_FLIGHT is 2).
    let status = 0;
    for (let tries = 0; status !== 200 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = (await server.request("GET", "/healthz")).status;
    }
    expect(status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await server.request("GET", "/timeline/global")).status).toBe(200);
  });
});

describe("overload over WebSocket (graphql-ws)", () => {
  it("counts each operation as a request in flight until it has run, open subscriptions not", async () => {
    const client = createClient({
      url: `${address.replace(/^http/, "ws")}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
    });
    const run = (query: string) =>
      new Promise<{ result?: unknown; errors?: unknown }>((resolve, reject) => {
        let result: unknown;
        client.subscribe(
          { query },
          {
            next: (r) => (result = r),
            error: (err) => (Array.isArray(err) ? resolve({ errors: err }) : reject(err)),
            complete: () => resolve({ result }),
          },
        );
      });
    const ANSWERED = { result: { data: { __typename: "Query" } } };
    try {
      expect(await run("{ __typename }")).toEqual(ANSWERED);
      // Two requests held in flight (MAX_IN_FLIGHT is 2 here): their bodies have not come whole.
      const bodies = [new PassThrough(), new PassThrough()];
      const held = bodies.map((payload) =>
        server.app.inject({ method: "POST", url: "/notes", headers: { "content-type": "application/json" }, payload }),
      );
      let outcome = await run("{ __typename }");
      // Until both have reached the server.
      for (let tries = 0; outcome.errors === undefined && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        outcome = await run("{ __typename }");
      }
      for (const body of bodies) body.end("{}");
      expect(outcome).toEqual({
        errors: [{ message: "SERVICE_UNAVAILABLE", extensions: { code: "SERVICE_UNAVAILABLE" } }],
      });
      expect((await Promise.all(held)).map((answer) => answer.statusCode)).toEqual([401, 401]);
      expect(await run("{ __typename }")).toEqual(ANSWERED);

      // Two subscriptions, open (each has had its first event), leave the room they took to start.
      const streams = [0, 1].map(() => client.iterate({ query: "subscription { globalTimeline { content } }" }));
      const firsts = streams.map((stream) => stream.next());
      const alice = await directAccount(server, "ov_alice");
      // Their start may not have run yet: post until both have seen a note. While both starts are
      // still in flight they take the room a post needs (503, as counted until they have run).
      const seen = Promise.all(firsts);
      let settled = false;
      void seen.finally(() => {
        settled = true;
      });
      for (let tries = 0; !settled && tries < 100; tries++) {
        const posted = await server.request("POST", "/notes", {
          body: { content: "to the open streams" },
          token: alice.token,
        });
        expect([201, 503]).toContain(posted.status);
        await Promise.race([seen, new Promise((resolve) => setTimeout(resolve, 20))]);
      }
      expect((await seen).map((event) => event.value)).toEqual([
        { data: { globalTimeline: { content: "to the open streams" } } },
        { data: { globalTimeline: { content: "to the open streams" } } },
      ]);
      expect(await run("{ __typename }")).toEqual(ANSWERED);
      expect(await run("{ __typename }")).toEqual(ANSWERED);
      for (const stream of streams) await stream.return?.();
    } finally {
      await client.dispose();
    }
  });
});
