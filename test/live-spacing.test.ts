// An instance reads the live journal at most once per LIVE_READ_SPACING_MS (src/domain/live/hub.ts):
// a burst's events are read together and each stream gets them in one write. Spaced a second
// apart here, a note posted just after another reaches a stream no sooner than the next read.
import { afterAll, beforeAll, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

const SPACING_MS = 1_000;

let server: TestServer;
let alice: TestAccount;
let stream: SseClient;
beforeAll(async () => {
  server = await startTestServer({ LIVE_READ_SPACING_MS: String(SPACING_MS) });
  const address = await server.app.listen({ port: 0, host: "127.0.0.1" });
  alice = await account(server, "ls_alice");
  stream = await openSse(`${address}/streaming/global`);
});
afterAll(async () => {
  stream?.close();
  await server?.close();
});

it("sends a note posted just after another at the next read, the spacing after the last", async () => {
  await act.post(server, alice, { content: "first" });
  await stream.event(0, 10_000);
  const firstAt = performance.now();
  await act.post(server, alice, { content: "second" });
  const second = await stream.event(1, 10_000);
  expect(JSON.parse(second.data)).toMatchObject({ content: "second" });
  // The read that sent the first began before it arrived: the next one is due a spacing after that.
  expect(performance.now() - firstAt).toBeGreaterThan(SPACING_MS / 2);
});
