// Live streams in a process of their own (docs/live.md#process), as `npm start` runs them: a stream's
// request reaches the server's port and is answered by its child, refusals included; the child
// checks the tokens its parent signed with the key it made at start (no TOKEN_SIGNING_KEY here);
// /metrics counts the child's streams; a child killed ends its streams, which reopen at once (the
// parent serves them until a new child is ready, and those asked for as it died); the parent's
// stop stops it, cleanly and at once also after children that held streams ended;
// STREAMS_PROCESS=off starts none.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Instance, startInstance } from "./support/instances.ts";
import { accountOn, call, type RemoteAccount } from "./support/remote.ts";
import { freshDatabase } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

let server: Instance;
let alice: RemoteAccount;
const open: SseClient[] = [];

/** The processes `pid` started that still run. */
function childrenOf(pid: number): number[] {
  const listed = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return listed ? listed.split(" ").map(Number) : [];
}

/** Waits until the server has said `times` times that a streams process serves; its pid. */
async function streamsReady(times: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const said = [...server.output().matchAll(/the streams process \(pid (\d+)\) serves the live streams/g)];
    if (said.length >= times) return Number(said[times - 1][1]);
    if (Date.now() > deadline) throw new Error("no streams process became ready");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stream(path: string, token?: string): Promise<SseClient> {
  const client = await openSse(`${server.url}${path}`, token ? { authorization: `Bearer ${token}` } : {});
  open.push(client);
  return client;
}

async function streamsOpen(): Promise<number> {
  const text = await fetch(`${server.url}/metrics`).then((r) => r.text());
  return Number(/^murmur_live_streams_open (\d+)$/m.exec(text)?.[1]);
}

beforeAll(async () => {
  server = await startInstance({ DATABASE_URL: await freshDatabase(), LOG_LEVEL: "info" });
  alice = await accountOn(server, "alice");
}, 60_000);

afterAll(async () => {
  for (const client of open) client.close();
  await server?.stop();
});

describe("live streams in a process of their own", () => {
  it("answers a stream's request from the child, refusals and tokens as the server's own", async () => {
    const child = await streamsReady(1);
    expect(childrenOf(server.child.pid as number)).toEqual([child]);
    const refused = await stream("/streaming/home");
    expect([refused.status, refused.refusal]).toEqual([401, { error: "UNAUTHORIZED" }]);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    // Its connection ends with it: the client's next request is the parent's again.
    expect(refused.headers.get("connection")).toBe("close");

    const home = await stream("/streaming/home", alice.token);
    expect(home.status).toBe(200);
    const note = await call(server, "POST", "/notes", { content: "from the parent" }, alice.token);
    expect(note.status).toBe(201);
    const heard = await home.event(0);
    expect([heard.event, heard.id, JSON.parse(heard.data).content]).toEqual(["note", note.body.id, "from the parent"]);
    // Counted in the parent's /metrics, as the child reports it (once a second).
    const deadline = Date.now() + 5_000;
    while ((await streamsOpen()) !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await streamsOpen()).toBe(1);

    // The stream lived in the child: killed, it ends. Streams asked for at that moment, before
    // the server has heard of its end, are answered all the same (the hand-over fails: the
    // server serves them), not cut unanswered.
    process.kill(child, "SIGKILL");
    const atOnce = await Promise.all(Array.from({ length: 12 }, () => stream("/streaming/global")));
    expect(atOnce.map((s) => s.status)).toEqual(atOnce.map(() => 200));
    await home.ended;
    // Reopened at once (in the parent until a new child is ready), it misses nothing.
    const reopened = await stream("/streaming/home", alice.token);
    expect(reopened.status).toBe(200);
    const meanwhile = await call(server, "POST", "/notes", { content: "while it restarts" }, alice.token);
    expect((await reopened.event(0)).id).toBe(meanwhile.body.id);

    const next = await streamsReady(2);
    expect(next).not.toBe(child);
    expect(childrenOf(server.child.pid as number)).toEqual([next]);
    // Under /v0 as at /: the new child's.
    const again = await stream("/v0/streaming/global");
    const later = await call(server, "POST", "/notes", { content: "the new child" }, alice.token);
    expect((await again.event(0)).id).toBe(later.body.id);
    process.kill(next, "SIGKILL");
    await again.ended;
  }, 60_000);

  it("stops with the server, and is not started with STREAMS_PROCESS=off", async () => {
    const child = await streamsReady(3);
    await server.stop();
    // A clean stop at once, also after children that held streams had ended.
    expect(server.child.exitCode).toBe(0);
    expect(server.output()).not.toContain("shutdown took too long");
    expect(fs.existsSync(`/proc/${child}`)).toBe(false);

    server = await startInstance({ DATABASE_URL: await freshDatabase(), STREAMS_PROCESS: "off" });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(childrenOf(server.child.pid as number)).toEqual([]);
  }, 60_000);
});
