// A home stream gets exactly the notes its timeline shows (docs/live.md#events), though the hub
// asks the rule of every home stream's viewer at once, as sets (homeViewers, src/domain/live/hub.ts),
// where the timeline asks homeRule of one viewer: the author itself, followers, a stranger, a
// follower who muted the author, the recipient of a direct note, notes of every visibility, and a
// frozen author's note.
import { expect, it } from "vitest";
import { type LiveEvent, LiveStream } from "../src/domain/live/stream.ts";
import type { CallerAccount } from "../src/domain/sessions/caller-cache.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { serverAndOperator } from "./support/server.ts";

const opened = serverAndOperator();

it("sends each home stream the notes its timeline shows, and no other", async () => {
  const names = ["hr_author", "hr_follower", "hr_stranger", "hr_muter", "hr_recipient", "hr_frozen", "hr_fan"];
  const [author, follower, stranger, muter, recipient, frozen, fan] = await Promise.all(
    names.map((name) => account(opened.server, name)),
  );
  const call = async (method: string, path: string, who: TestAccount, body: Record<string, unknown> = {}) => {
    const answer = await opened.server.request(method, path, { token: who.token, body });
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    return answer.body as { id: string };
  };
  for (const who of [follower, muter, recipient]) await call("POST", "/accounts/hr_author/follow", who);
  await call("POST", "/accounts/hr_frozen/follow", fan);
  await call("POST", "/accounts/hr_author/mute", muter);

  const viewers = [author, follower, stranger, muter, recipient, fan];
  const hub = opened.server.services.live;
  if (!hub) throw new Error("no hub");
  const heard = new Map<TestAccount, string[]>();
  for (const [k, who] of viewers.entries()) {
    const stream = new LiveStream("home", { id: BigInt(who.id) } as CallerAccount, `192.0.2.${k + 1}`);
    await hub.add(stream);
    const ids: string[] = [];
    heard.set(who, ids);
    stream.attach((event: LiveEvent) => ids.push(event.id.toString()));
  }

  for (const visibility of ["public", "home", "followers"])
    await call("POST", "/notes", author, { content: visibility, visibility });
  await call("POST", "/notes", author, { content: "direct", visibility: "direct", send_to: recipient.id });
  // A frozen account posts nothing through the API: its note is written as another client would.
  await opened.operator.query("UPDATE accounts SET frozen = true WHERE id = $1", [frozen.id]);
  await opened.operator.query("INSERT INTO notes (id, author_id, content) VALUES ($1, $2, 'frozen')", [
    4_100_000_000_000n,
    frozen.id,
  ]);
  // Each viewer's own note comes last: once heard, everything before it was sent.
  const marks = new Map<TestAccount, string>();
  for (const who of viewers) marks.set(who, (await call("POST", "/notes", who, { content: "mark" })).id);
  for (const who of viewers) {
    const deadline = Date.now() + 10_000;
    while (!heard.get(who)?.includes(marks.get(who) as string)) {
      if (Date.now() > deadline) throw new Error(`${who.name} did not hear its own note`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  for (const who of viewers) {
    const timeline = (await opened.server.request("GET", "/timeline/home", { token: who.token })).body as {
      id: string;
    }[];
    expect(heard.get(who)?.toSorted(), who.name).toEqual(timeline.map((n) => n.id).toSorted());
  }
  // Each case is told apart: the author and its followers see its three non-direct notes and its
  // mark (and their own); the muter, the stranger and the frozen author's fan only their own.
  expect(viewers.map((who) => heard.get(who)?.length)).toEqual([4, 5, 1, 1, 5, 1]);
});
