// What live streams must not tell (docs/live.md#events): a list's stream stops showing notes
// once its reader may no longer read the list, and a deleted note's id goes only to the
// streams that could have shown the note.
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { directAccount, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

let server: TestServer;
let url: string;
const open: SseClient[] = [];

beforeAll(async () => {
  server = await startTestServer();
  await server.app.listen({ host: "127.0.0.1", port: 0 });
  url = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const client of open) client.close();
  await server.close();
});

async function stream(path: string, who: TestAccount): Promise<SseClient> {
  const client = await openSse(`${url}${path}`, { authorization: `Bearer ${who.token}` });
  expect(client.status).toBe(200);
  open.push(client);
  return client;
}

async function call(method: string, path: string, who: TestAccount, body?: unknown) {
  const answer = await server.request(method, path, { token: who.token, body });
  expect(answer.status).toBeLessThan(300);
  return answer.body;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a list stream", () => {
  it("shows nothing more to a reader once the list is made private, nor to anyone once it is deleted", async () => {
    const [bob, alice, eve, zed] = await Promise.all(
      ["lbob", "lalice", "leve", "lzed"].map((name) => directAccount(server, name)),
    );
    const list = await call("POST", "/lists", bob, { title: "public birds", public: true });
    await call("POST", `/lists/${list.id}`, bob, { account_id: [zed.id] });
    const alices = await stream(`/streaming/lists/${list.id}`, alice);
    const bobs = await stream(`/streaming/lists/${list.id}`, bob);
    const before = await call("POST", "/notes", zed, { content: "while public" });
    expect((await alices.event(0)).id).toBe(before.id);

    await call("PATCH", `/lists/${list.id}`, bob, { public: false });
    await call("POST", `/lists/${list.id}`, bob, { account_id: [eve.id] });
    const secret = await call("POST", "/notes", eve, { content: "now private" });
    // The owner still sees it: the event was read and judged.
    expect((await bobs.event(1)).id).toBe(secret.id);
    await sleep(300);
    expect(alices.events.map((e) => e.id)).toEqual([before.id]);
    expect((await server.request("GET", `/lists/${list.id}/notes`, { token: alice.token })).status).toBe(404);

    expect((await server.request("DELETE", `/lists/${list.id}`, { token: bob.token })).status).toBe(204);
    await call("POST", "/notes", zed, { content: "list gone" });
    await sleep(300);
    expect(bobs.events.map((e) => e.id)).toEqual([before.id, secret.id]);
  });
});

describe("a deleted note's id", () => {
  it("goes only to the streams that could have shown the note", async () => {
    const [author, follower, stranger] = await Promise.all(
      ["dauthor", "dfollower", "dstranger"].map((name) => directAccount(server, name)),
    );
    await call("POST", "/accounts/dauthor/follow", follower);
    const list = await call("POST", "/lists", stranger, { title: "watching", public: true });
    await call("POST", `/lists/${list.id}`, stranger, { account_id: [author.id] });
    const followerHome = await stream("/streaming/home", follower);
    const strangerHome = await stream("/streaming/home", stranger);
    const strangerList = await stream(`/streaming/lists/${list.id}`, stranger);
    const global = await stream("/streaming/global", stranger);

    const hidden = await call("POST", "/notes", author, { content: "followers only", visibility: "followers" });
    expect((await followerHome.event(0)).id).toBe(hidden.id);
    expect((await server.request("DELETE", `/notes/${hidden.id}`, { token: author.token })).status).toBe(204);
    const deleted = await followerHome.event(1);
    expect([deleted.event, JSON.parse(deleted.data)]).toEqual(["delete", { id: hidden.id }]);

    // A public note's deletion reaches the list and global streams that showed it.
    const shown = await call("POST", "/notes", author, { content: "for all" });
    expect((await strangerList.event(0)).id).toBe(shown.id);
    expect((await server.request("DELETE", `/notes/${shown.id}`, { token: author.token })).status).toBe(204);
    expect((await strangerList.event(1)).event).toBe("delete");
    expect((await global.event(1)).event).toBe("delete");
    await sleep(300);
    expect(strangerHome.events).toEqual([]);
    expect(strangerList.events.map((e) => [e.event, JSON.parse(e.data).id])).toEqual([
      ["note", shown.id],
      ["delete", shown.id],
    ]);
  });
});
