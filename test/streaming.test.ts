// Live streams (docs/live.md#fan-out) across two server processes on one database: every
// stream is read on A while everything is written through B, so each event crossed instances.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../src/db/client.ts";
import { TOKEN_LIFETIME_SECONDS, TokenIssuer } from "../src/domain/sessions/tokens.ts";
import { holdOpen } from "./support/held-transaction.ts";
import { type Instance, startInstance } from "./support/instances.ts";
import { run } from "./support/process.ts";
import { accountOn, call, type RemoteAccount } from "./support/remote.ts";
import { freshDatabase } from "./support/server.ts";
import { openSse, type SseClient } from "./support/sse.ts";

let a: Instance;
let b: Instance;
let env: Record<string, string>;
const open: SseClient[] = [];

type Account = RemoteAccount;

async function stream(path: string, who?: Account, headers: Record<string, string> = {}): Promise<SseClient> {
  const client = await openSse(`${a.url}${path}`, {
    ...(who ? { authorization: `Bearer ${who.token}` } : {}),
    ...headers,
  });
  open.push(client);
  return client;
}

async function post(who: Account, body: Record<string, unknown>) {
  const answer = await call(b, "POST", "/notes", body, who.token);
  expect(answer.status).toBe(201);
  return answer.body as { id: string };
}

let alice: Account;
let bob: Account;
let carol: Account;
let mod: Account;

beforeAll(async () => {
  env = { DATABASE_URL: await freshDatabase(), TOKEN_SIGNING_KEY: randomBytes(32).toString("base64") };
  [a, b] = await Promise.all([startInstance({ ...env, WORKER_ID: "11" }), startInstance({ ...env, WORKER_ID: "12" })]);
  [alice, bob, carol, mod] = await Promise.all(
    ["alice", "bob", "carol", "mod"].map((name) => accountOn(b, name, [a, b])),
  );
  expect((await run("src/cli/main.ts", ["role", "mod", "moderator"], env)).code).toBe(0);
  expect((await call(b, "POST", "/accounts/alice/follow", {}, bob.token)).status).toBe(201);
}, 120_000);

afterAll(async () => {
  for (const client of open) client.close();
  await Promise.all([a?.stop(), b?.stop()]);
});

describe("refusals come before the stream, as JSON errors", () => {
  it("answers missing or bad credentials, an unknown list and a bad Last-Event-ID", async () => {
    const none = await stream("/streaming/home");
    expect([none.status, none.refusal]).toEqual([401, { error: "UNAUTHORIZED" }]);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const bad = await stream("/streaming/notifications?access_token=nonsense");
    expect([bad.status, bad.refusal]).toEqual([401, { error: "INVALID_TOKEN" }]);
    const list = await stream("/streaming/lists/123", bob);
    expect([list.status, list.refusal]).toEqual([404, { error: "LIST_NOTFOUND" }]);
    const resume = await stream("/streaming/global", undefined, { "last-event-id": "yesterday" });
    expect([resume.status, resume.refusal]).toEqual([400, { error: "INVALID_REQUEST" }]);
  });
});

describe("notes reach the streams whose timeline they belong on", () => {
  it("home, global and list streams on A hear notes written through B, each as its timeline shows it", async () => {
    const list = await call(b, "POST", "/lists", { title: "birds" }, bob.token);
    expect(list.status).toBe(200);
    expect((await call(b, "POST", `/lists/${list.body.id}`, { account_id: [alice.id] }, bob.token)).status).toBe(200);
    const bobHome = await stream(`/streaming/home?access_token=${bob.token}`);
    const carolHome = await stream("/streaming/home", carol);
    const global = await stream("/streaming/global");
    const bobList = await stream(`/streaming/lists/${list.body.id}`, bob);
    expect(bobHome.status).toBe(200);
    expect(bobHome.headers.get("content-type")).toMatch(/^text\/event-stream/);

    const shown = await post(alice, { content: "live osprey" });
    const followers = await post(alice, { content: "for followers", visibility: "followers" });
    const direct = await post(alice, { content: "to carol", visibility: "direct", send_to: "carol" });
    const own = await post(carol, { content: "carol's own" });

    const timeline = (await call(b, "GET", "/timeline/home", undefined, bob.token)).body;
    const [first, second] = [await bobHome.event(0), await bobHome.event(1)];
    expect([first.event, first.id, second.id]).toEqual(["note", shown.id, followers.id]);
    expect(JSON.parse(first.data)).toEqual(timeline.find((n: { id: string }) => n.id === shown.id));
    expect((await bobList.event(0)).id).toBe(shown.id);
    expect((await bobList.event(1)).id).toBe(followers.id);
    expect((await global.event(0)).id).toBe(shown.id);
    // Carol follows nobody: the first note on her home is her own; the direct note is on no timeline.
    expect((await carolHome.event(0)).id).toBe(own.id);
    expect((await global.event(1)).id).toBe(own.id);
    for (const client of [bobHome, bobList, carolHome, global]) {
      expect(client.events.map((e) => e.id)).not.toContain(direct.id);
    }

    const deleted = await call(b, "DELETE", `/notes/${shown.id}`, undefined, alice.token);
    expect(deleted.status).toBe(204);
    const gone = await bobHome.event(2);
    expect([gone.event, JSON.parse(gone.data)]).toEqual(["delete", { id: shown.id }]);
  }, 30_000);

  it("a stream resumed with Last-Event-ID first sends what it missed, oldest first, with no gap and no duplicate", async () => {
    const first = await stream("/streaming/home", bob);
    const seen = await post(alice, { content: "before the drop" });
    expect((await first.event(0)).id).toBe(seen.id);
    first.close();
    const missed = [await post(alice, { content: "missed 1" }), await post(alice, { content: "missed 2" })];
    const resumed = await stream("/streaming/home", bob, { "last-event-id": seen.id });
    const live = await post(alice, { content: "after the return" });
    const ids = [await resumed.event(0), await resumed.event(1), await resumed.event(2)].map((e) => e.id);
    expect(ids).toEqual([...missed.map((n) => n.id), live.id]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(resumed.events).toHaveLength(3);
    const byQuery = await stream(`/streaming/home?last_event_id=${missed[0].id}`, bob);
    expect((await byQuery.event(0)).id).toBe(missed[1].id);
  }, 30_000);
});

describe("a fresh stream starts where it opens", () => {
  it("a note committed before the opening is not sent, though an older transaction still running holds the journal back", async () => {
    const holder = createDb(env.DATABASE_URL, () => {});
    try {
      // Anything running anywhere in the cluster keeps the journal's horizon before what follows.
      const held = await holdOpen(holder, (tx) => tx.$executeRaw`SELECT pg_current_xact_id()`);
      const before = await post(alice, { content: "before the opening" });
      const global = await stream("/streaming/global");
      const after = await post(alice, { content: "after the opening" });
      await held.commit();
      expect((await global.event(0)).id).toBe(after.id);
      expect(global.events.map((e) => e.id)).not.toContain(before.id);
    } finally {
      await holder.$disconnect();
    }
  }, 30_000);
});

describe("the timeline's rule is asked at delivery", () => {
  it("an unfollow takes effect on the next event", async () => {
    const frank = await accountOn(b, "frank", [a, b]);
    expect((await call(b, "POST", "/accounts/alice/follow", {}, frank.token)).status).toBe(201);
    const home = await stream("/streaming/home", frank);
    const followed = await post(alice, { content: "while followed" });
    expect((await home.event(0)).id).toBe(followed.id);
    expect((await call(b, "DELETE", "/accounts/alice/follow", undefined, frank.token)).status).toBe(204);
    const unfollowed = await post(alice, { content: "after the unfollow" });
    const own = await post(frank, { content: "frank's own" });
    expect((await home.event(1)).id).toBe(own.id);
    expect(home.events.map((e) => e.id)).not.toContain(unfollowed.id);
  }, 30_000);
});

describe("notifications", () => {
  it("a notification and an announcement reach the recipient's stream as GET /notifications shows them", async () => {
    const carolNotices = await stream("/streaming/notifications", carol);
    expect((await call(b, "POST", "/accounts/carol/follow", {}, bob.token)).status).toBe(201);
    const event = await carolNotices.event(0);
    const listed = (await call(b, "GET", "/notifications", undefined, carol.token)).body.notifications[0];
    expect([event.event, event.id]).toEqual(["notification", listed.id]);
    expect(JSON.parse(event.data)).toEqual(listed);
    expect(
      (
        await run(
          "src/cli/main.ts",
          ["announce", "--type", "info", "--title", "Maintenance", "--description", "Sunday"],
          env,
        )
      ).code,
    ).toBe(0);
    const announced = await carolNotices.event(1);
    expect(announced.event).toBe("announcement");
    expect(JSON.parse(announced.data)).toMatchObject({ title: "Maintenance", description: "Sunday", unread: true });
  }, 30_000);
});

describe("a stream ends", () => {
  it("when its account is frozen through another instance", async () => {
    const dave = await accountOn(b, "dave", [a, b]);
    const home = await stream("/streaming/home", dave);
    expect(home.status).toBe(200);
    expect((await call(b, "PUT", "/accounts/dave/freeze", {}, mod.token)).status).toBe(204);
    await expect(Promise.race([home.ended.then(() => "ended"), sleep(5_000)])).resolves.toBe("ended");
    const again = await stream("/streaming/home", dave);
    expect([again.status, again.refusal]).toEqual([403, { error: "YOU_ARE_FROZEN" }]);
  }, 30_000);

  it("when its token expires", async () => {
    const tokens = await TokenIssuer.create(env.TOKEN_SIGNING_KEY);
    // Issued long enough ago that it has two seconds left.
    const issuedAt = new Date(Date.now() - (TOKEN_LIFETIME_SECONDS.access - 2) * 1000);
    const { token } = await tokens.sign(BigInt(bob.id), "access", issuedAt);
    const home = await stream("/streaming/home", { ...bob, token });
    expect(home.status).toBe(200);
    await expect(Promise.race([home.ended.then(() => "ended"), sleep(6_000)])).resolves.toBe("ended");
    const again = await stream("/streaming/home", { ...bob, token });
    expect([again.status, again.refusal]).toEqual([401, { error: "EXPIRED_TOKEN" }]);
  }, 30_000);

  it("when its account logs out everywhere through another instance", async () => {
    const gus = await accountOn(b, "gus", [a, b]);
    const home = await stream("/streaming/home", gus);
    expect(home.status).toBe(200);
    expect((await call(b, "DELETE", "/sessions", undefined, gus.token)).status).toBe(204);
    await expect(Promise.race([home.ended.then(() => "ended"), sleep(5_000)])).resolves.toBe("ended");
  }, 30_000);

  it("past 20 streams of one account, the next is refused 429", async () => {
    const erin = await accountOn(b, "erin", [a, b]);
    const twenty = await Promise.all(Array.from({ length: 20 }, () => stream("/streaming/global", erin)));
    expect(twenty.map((s) => s.status)).toEqual(twenty.map(() => 200));
    const more = await stream("/streaming/home", erin);
    expect([more.status, more.refusal]).toEqual([429, { error: "RATE_LIMITED" }]);
    for (const s of twenty) s.close();
  }, 30_000);

  it("at shutdown, without holding the server's exit", async () => {
    const home = await stream("/streaming/home", bob);
    const started = Date.now();
    await a.stop();
    await home.ended;
    if (Date.now() - started > 5_000) console.log(a.output());
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 30_000);
});

const sleep = (ms: number) => new Promise<string>((resolve) => setTimeout(() => resolve("timeout"), ms));
