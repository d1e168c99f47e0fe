// Overload (CONTRACT 10): past MAX_IN_FLIGHT requests in flight, the server answers 503
// SERVICE_UNAVAILABLE with Retry-After at once, and serves again when the load falls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ MAX_IN_FLIGHT: "2" });
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
