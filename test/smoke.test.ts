import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe("smoke", () => {
  it("registers, verifies and logs in alice", async () => {
    const alice = await account(server, "alice");
    const me = await server.request("GET", "/accounts/alice", { token: alice.token });
    expect(me.status).toBe(200);
    expect(me.body.name).toBe("@alice@murmur.test");
    expect(me.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
  });
});
