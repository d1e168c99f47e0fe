// An instance reads the live journal at most once per LIVE_READ_SPACING_MS (src/domain/live/hub.ts):
// a burst's events are read together and each stream gets them in one write. Spaced a second
// apart here, a note posted just after another reaches a stream no sooner than the next read.
// The more streams a read wrote to, the further apart the next (LIVE_WRITES_PER_SECOND, within
// LIVE_READ_BUDGET_MS).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

describe("spaced by the writes the last read made", () => {
  const WRITES_PER_SECOND = 2;
  let spaced: TestServer;
  let bob: TestAccount;
  let streams: SseClient[];
  beforeAll(async () => {
    spaced = await startTestServer({
      LIVE_READ_SPACING_MS: "0",
      LIVE_WRITES_PER_SECOND: String(WRITES_PER_SECOND),
      LIVE_READ_BUDGET_MS: "1000",
    });
    const address = await spaced.app.listen({ port: 0, host: "127.0.0.1" });
    bob = await account(spaced, "ls_bob");
    streams = await Promise.all([0, 1].map(() => openSse(`${address}/streaming/global`)));
  });
  afterAll(async () => {
    for (const s of streams ?? []) s.close();
    await spaced?.close();
  });

  it("holds the read after one that wrote to two streams a second (two writes at two a second)", async () => {
    await act.post(spaced, bob, { content: "first" });
    await Promise.all(streams.map((s) => s.event(0, 10_000)));
    const firstAt = performance.now();
    await act.post(spaced, bob, { content: "second" });
    const second = await streams[0].event(1, 10_000);
    expect(JSON.parse(second.data)).toMatchObject({ content: "second" });
    // Without streams written to, LIVE_READ_SPACING_MS (0 here) would have read it at once.
    expect(performance.now() - firstAt).toBeGreaterThan(500);
  });
});
