// A crowd reacting to one note at once (src/domain/reactions/service.ts, src/db/keyed-writes.ts):
// the reactions that come while one is written go in one statement, and their answers are read
// in one; each caller still gets its own outcome (200, ALREADY_REACTED, YOU_ARE_BLOCKED) and its
// own note with its reaction shown, and every count and notice is exact, also through two
// instances of one database at once.
import { expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { expectError } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { twoInstances } from "./support/server.ts";
import { expectShape, FullNoteShape } from "./support/shapes.ts";

/** `other`: a second instance of the same database. */
const fleet = twoInstances();

it("writes a crowd's reactions together, each with its own outcome and answer", async () => {
  const author = await account(fleet.server, "rt_author");
  const crowd = await Promise.all(Array.from({ length: 24 }, (_, i) => account(fleet.server, `rt_crowd${i}`)));
  const blocked = await account(fleet.server, "rt_blocked");
  expect(
    (await fleet.server.request("POST", `/accounts/${blocked.name}/block`, { token: author.token, body: {} })).status,
  ).toBe(204);
  const { id: noteId } = await act.post(fleet.server, author, { content: "everyone react" });
  const react = (who: TestAccount, emoji: string) =>
    fleet.server.request("POST", `/notes/${noteId}/reaction`, { token: who.token, body: { emoji } });

  const asked = [...crowd.map((who, i) => ({ who, emoji: i % 2 ? "👍" : "🎉" })), { who: crowd[3], emoji: "🔥" }];
  const [answers, blockedAnswer] = await Promise.all([
    Promise.all(asked.map(({ who, emoji }) => react(who, emoji))),
    react(blocked, "👍"),
  ]);

  expectError(blockedAnswer, 403, "YOU_ARE_BLOCKED");
  // crowd[3] asked twice: one of its two is its reaction, the other ALREADY_REACTED.
  const twice = [answers[3], answers[24]];
  expect(twice.map((a) => a.status).sort()).toEqual([200, 400]);
  expectError(twice.find((a) => a.status === 400) as (typeof answers)[number], 400, "ALREADY_REACTED");
  for (const [i, answer] of answers.entries()) {
    if (answer.status !== 200) continue;
    const { who } = asked[i];
    expectShape(FullNoteShape, answer.body);
    expect(answer.body.id).toBe(noteId);
    // Its own reaction among those shown, however many came before it (docs/notes.md#bounded-reactions).
    expect(answer.body.reactions).toContainEqual({ emoji: asked[i].emoji, reacted_by: who.id });
    expect(answer.body.reaction_count).toBeGreaterThanOrEqual(1);
  }

  const { db } = fleet.server.services;
  const [{ reactions, transactions }] = await db.$queryRaw<{ reactions: bigint; transactions: bigint }[]>`
    SELECT count(*) AS reactions, count(DISTINCT xmin::text) AS transactions FROM reactions WHERE note_id = ${BigInt(noteId)}`;
  expect(reactions).toBe(24n);
  expect(transactions).toBeLessThan(24n);
  const note = await fleet.server.request("GET", `/notes/${noteId}`, { token: author.token });
  expect(note.body.reaction_count).toBe(24);
  const reacted = await db.notification.count({ where: { noteId: BigInt(noteId), type: "reacted" } });
  expect(reacted).toBe(24);
});

it("writes a crowd's reactions through two instances at once: each caller once, the counts exact", async () => {
  const author = await account(fleet.server, "rt2_author");
  const crowd = await Promise.all(Array.from({ length: 48 }, (_, i) => account(fleet.server, `rt2_crowd${i}`)));
  const { id: noteId } = await act.post(fleet.server, author, { content: "react through both" });
  // Every caller through both instances at once: one of each pair reacts, the other is refused.
  const answers = await Promise.all(
    crowd.flatMap((who) =>
      [fleet.server, fleet.other].map((at) =>
        at.request("POST", `/notes/${noteId}/reaction`, { token: who.token, body: { emoji: "👍" } }),
      ),
    ),
  );
  expect(answers.filter((a) => a.status === 200)).toHaveLength(48);
  for (const answer of answers.filter((a) => a.status !== 200)) expectError(answer, 400, "ALREADY_REACTED");
  const note = await fleet.other.request("GET", `/notes/${noteId}`, { token: author.token });
  expect(note.body.reaction_count).toBe(48);
  expect(note.body.reaction_counts).toEqual({ "👍": 48 });
  expect(
    await fleet.server.services.db.notification.count({ where: { noteId: BigInt(noteId), type: "reacted" } }),
  ).toBe(48);
});
