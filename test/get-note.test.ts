// GET /notes/{id} is answered with the note PostgreSQL writes as JSON in the statement that finds
// it (notes.getNote with fullNotesJson): for every kind of caller and of note its answer must be
// the one findVisibleNote and fullNoteView give, member for member, and NOTE_NOT_FOUND exactly
// where findVisibleNote refuses (frozen and deleted authors, followers-only and direct notes,
// moderators), the bounded reactions with the caller's own and the counts by emoji included.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Context } from "../src/domain/context.ts";
import { DomainError } from "../src/domain/errors.ts";
import { findVisibleNote, getNote } from "../src/domain/notes/service.ts";
import { fullNoteView } from "../src/rest/views/note.ts";
import { fullNotesJson } from "../src/rest/views/note-sql.ts";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { viralNote } from "./support/scenes.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let callers: [string, TestAccount | undefined][];
let notes: [string, string][];

beforeAll(async () => {
  server = await startTestServer();
  const { alice, follower, bob, stranger, moderator } = await cast(server, {
    alice: "gn_alice",
    follower: "gn_fol",
    bob: "gn_bob",
    stranger: "gn_sam",
    moderator: "gn_mod",
  });
  const { viral, reactors } = await viralNote(server, alice, bob, "gn_");
  const frozen = await account(server, "gn_frozen");
  const deleted = await account(server, "gn_deleted");
  await act.follow(server, follower, frozen);
  notes = [["viral", viral.id]];
  for (const visibility of ["public", "home", "followers", "direct"]) {
    const made = await act.post(server, alice, {
      content: visibility,
      visibility,
      ...(visibility === "direct" ? { send_to: bob.id } : {}),
    });
    notes.push([visibility, made.id]);
  }
  // bob's renote, quote and reply of the viral note.
  const others = await server.services.db.note.findMany({
    where: { authorId: BigInt(bob.id) },
    orderBy: { id: "asc" },
  });
  notes.push(...others.map((n, i) => [`bob's ${i}`, n.id.toString()] as [string, string]));
  notes.push(["frozen author's", (await act.post(server, frozen, { content: "frozen" })).id]);
  notes.push(["deleted author's", (await act.post(server, deleted, { content: "deleted" })).id]);
  await act.moderate(server, moderator, frozen.name, "freeze");
  // As an account's deletion leaves it until its rows are gone: frozen, and marked deleted.
  await server.services.db.account.update({
    where: { id: BigInt(deleted.id) },
    data: { frozen: true, deletedAt: new Date() },
  });
  notes.push(["unknown", "999999999999999999"], ["not an id", "not-a-note"]);
  callers = [
    ["nobody", undefined],
    ["author", alice],
    ["follower", follower],
    ["addressee", bob],
    ["stranger", stranger],
    ["moderator", moderator],
    ["reactor older than the newest 20", reactors[0]],
    ["newest reactor", reactors[23]],
  ];
});
afterAll(() => server?.close());

async function contextOf(who: TestAccount | undefined): Promise<Context> {
  const account = who && (await server.services.db.account.findUniqueOrThrow({ where: { id: BigInt(who.id) } }));
  return { ...server.services, caller: { account } } as Context;
}

/** What findVisibleNote and fullNoteView answer: the note's JSON, or the error's code. */
async function expected(ctx: Context, id: string): Promise<unknown> {
  try {
    return JSON.parse(JSON.stringify(fullNoteView(ctx, await findVisibleNote(ctx, id))));
  } catch (err) {
    if (err instanceof DomainError) return { error: err.code };
    throw err;
  }
}

it("answers as findVisibleNote and fullNoteView do, for every caller and note", async () => {
  const seen = new Set<string>();
  for (const [caller, who] of callers) {
    const ctx = await contextOf(who);
    for (const [kind, id] of notes) {
      const want = await expected(ctx, id);
      seen.add(JSON.stringify(want).slice(0, 20));
      const written = await getNote(ctx, id, fullNotesJson).then(
        (note) => JSON.parse(note.toString()),
        (err) => {
          if (err instanceof DomainError) return { error: err.code };
          throw err;
        },
      );
      expect(written, `${kind} note, as ${caller}, in the domain`).toEqual(want);
      const answer = await server.request("GET", `/notes/${id}`, { token: who?.token });
      expect(answer.body, `${kind} note, as ${caller}, over REST`).toEqual(want);
      expect(answer.status).toBe("error" in (want as object) ? 404 : 200);
      expect(String(answer.headers["content-type"])).toMatch(/^application\/json/);
    }
  }
  // Both answers are among them.
  expect([...seen].some((s) => s.startsWith('{"error":"NOTE_NOT_F'))).toBe(true);
  expect([...seen].some((s) => s.startsWith('{"id":'))).toBe(true);
});

it("shows the caller's own reaction older than the newest 20, and the counts by emoji", async () => {
  const [, reactor] = callers[6];
  const [, viralId] = notes[0];
  const answer = await server.request("GET", `/notes/${viralId}`, { token: reactor?.token });
  expect(answer.status).toBe(200);
  expect(answer.body.reactions).toHaveLength(20);
  expect(answer.body.reactions.at(-1).reacted_by).toBe(reactor?.id);
  expect(answer.body.reaction_count).toBe(24);
  expect(Object.values(answer.body.reaction_counts).reduce((a: number, b) => a + (b as number), 0)).toBe(24);
});
