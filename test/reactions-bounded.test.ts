// Bounded reactions (docs/notes.md#bounded-reactions): wherever a note is returned, at most 20
// reactions, the newest, always with the caller's own; reaction_count and reaction_counts over all
// of them, kept by the database in the reaction's own transaction; GET /notes/{id}/reactions pages
// every reaction, 100 a page; GraphQL's reactionCount, reactionCounts and reactions connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, directAccount, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

const EMOJIS = ["👍", "🔥", "🎉"];
const FANS = 150;

let server: TestServer;
let author: TestAccount;
let early: TestAccount;
let noteId: string;
/** The reactions' accounts, oldest reaction first. */
let fans: bigint[];

/** `count` accounts reacting to `note`, one emoji of EMOJIS each in turn, one millisecond apart, straight to the database. */
async function reactMany(note: string, count: number, prefix: string): Promise<bigint[]> {
  const db = server.services.db;
  const ids = Array.from({ length: count }, () => server.services.ids.next());
  await db.account.createMany({
    data: ids.map((id, i) => ({
      id,
      name: `${prefix}${i}`,
      nameKey: `${prefix}${i}`,
      email: `${prefix}${i}@example.com`,
      emailKey: `${prefix}${i}@example.com`,
      nickname: `${prefix}${i}`,
      passphraseHash: "!",
      verified: true,
    })),
  });
  await db.reaction.createMany({
    data: ids.map((accountId, i) => ({
      id: server.services.ids.next(),
      noteId: BigInt(note),
      accountId,
      emoji: EMOJIS[i % EMOJIS.length],
    })),
  });
  return ids;
}

const get = (path: string, who?: TestAccount) => server.request("GET", path, { token: who?.token });

beforeAll(async () => {
  server = await startTestServer();
  author = await account(server, "author");
  early = await directAccount(server, "early");
  noteId = (await act.post(server, author, { content: "going viral" })).id;
  // The early account reacts first: 150 reactions come after it.
  expect(
    (await server.request("POST", `/notes/${noteId}/reaction`, { token: early.token, body: { emoji: "🐢" } })).status,
  ).toBe(200);
  fans = await reactMany(noteId, FANS, "fan");
});
afterAll(() => server?.close());

describe("a note with 151 reactions, wherever it is returned", () => {
  it("shows the newest 20, newest first, and counts all of them by emoji", async () => {
    const answer = await get(`/notes/${noteId}`);
    expect(answer.status).toBe(200);
    expect(answer.body.reactions).toEqual(
      fans
        .slice(-20)
        .reverse()
        .map((id) => ({ emoji: EMOJIS[fans.indexOf(id) % 3], reacted_by: id.toString() })),
    );
    expect(answer.body.reaction_count).toBe(FANS + 1);
    expect(answer.body.reaction_counts).toEqual({ "👍": 50, "🔥": 50, "🎉": 50, "🐢": 1 });
  });

  it("always shows the caller's own reaction, however many came after it, still 20 at most", async () => {
    for (const path of [`/notes/${noteId}`, "/timeline/global", `/timeline/accounts/${author.id}`]) {
      const answer = await get(path, early);
      const note = Array.isArray(answer.body) ? answer.body.find((n: { id: string }) => n.id === noteId) : answer.body;
      expect(note.reactions, path).toHaveLength(20);
      expect(note.reactions.slice(0, 19), path).toEqual(
        fans
          .slice(-19)
          .reverse()
          .map((id) => ({ emoji: EMOJIS[fans.indexOf(id) % 3], reacted_by: id.toString() })),
      );
      expect(note.reactions[19], path).toEqual({ emoji: "🐢", reacted_by: early.id });
      expect(note.reaction_count, path).toBe(FANS + 1);
    }
    // Bookmarks, search and the react answer itself too.
    await server.request("POST", `/notes/${noteId}/bookmark`, { token: early.token, body: {} });
    const bookmarked = (await get("/bookmarks", early)).body[0];
    expect(bookmarked.reactions).toContainEqual({ emoji: "🐢", reacted_by: early.id });
    const found = (await get(`/search/notes?query=viral`, early)).body[0];
    expect(found.reactions).toContainEqual({ emoji: "🐢", reacted_by: early.id });
    expect(found.reactions).toHaveLength(20);
  });

  it("the react answer shows the new reaction and the counts with it", async () => {
    const late = await directAccount(server, "late");
    const answer = await server.request("POST", `/notes/${noteId}/reaction`, {
      token: late.token,
      body: { emoji: "🔥" },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.reactions[0]).toEqual({ emoji: "🔥", reacted_by: late.id });
    expect(answer.body.reactions).toHaveLength(20);
    expect(answer.body.reaction_count).toBe(FANS + 2);
    expect(answer.body.reaction_counts["🔥"]).toBe(51);
    // Unreacting takes it out of the counts at once; an emoji nobody uses any more is absent.
    expect((await server.request("DELETE", `/notes/${noteId}/reaction`, { token: late.token })).status).toBe(204);
    expect((await server.request("DELETE", `/notes/${noteId}/reaction`, { token: early.token })).status).toBe(204);
    const after = (await get(`/notes/${noteId}`)).body;
    expect(after.reaction_count).toBe(FANS);
    expect(after.reaction_counts).toEqual({ "👍": 50, "🔥": 50, "🎉": 50 });
    await server.request("POST", `/notes/${noteId}/reaction`, { token: early.token, body: { emoji: "🐢" } });
  });

  it("a deleted account's reactions leave the counts with it", async () => {
    const note = (await act.post(server, author, { content: "short-lived fans" })).id;
    const [gone, stays] = await reactMany(note, 2, "gone");
    await server.services.db.account.delete({ where: { id: gone } });
    const answer = (await get(`/notes/${note}`)).body;
    expect(answer.reaction_count).toBe(1);
    expect(answer.reactions).toEqual([{ emoji: EMOJIS[1], reacted_by: stays.toString() }]);
  });
});

describe("GET /notes/{note_id}/reactions (extension)", () => {
  it("pages every reaction, newest first, 100 a page, by before_id, then 404 NOTHING_LEFT", async () => {
    const first = await get(`/notes/${noteId}/reactions`, author);
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(100);
    expect(first.body[0].reacted_by).toBe(early.id); // it reacted again last
    const second = await get(`/notes/${noteId}/reactions?before_id=${first.body[99].id}`, author);
    expect(second.body).toHaveLength(FANS + 1 - 100);
    const all = [...first.body, ...second.body];
    expect(new Set(all.map((r: { reacted_by: string }) => r.reacted_by)).size).toBe(FANS + 1);
    const ids = all.map((r: { id: string }) => BigInt(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : 1)));
    expect(second.body.at(-1)).toMatchObject({ reacted_by: fans[0].toString(), emoji: EMOJIS[0] });
    expectError(
      await get(`/notes/${noteId}/reactions?before_id=${second.body.at(-1).id}`, author),
      404,
      "NOTHING_LEFT",
    );
  });

  it("answers [] for a note without reactions, 404 for one the caller may not see", async () => {
    const quiet = (await act.post(server, author, { content: "nobody cares" })).id;
    expect((await get(`/notes/${quiet}/reactions`, early)).body).toEqual([]);
    const secret = (await act.post(server, author, { content: "just us", visibility: "followers" })).id;
    expectError(await get(`/notes/${secret}/reactions`, early), 404, "NOTE_NOT_FOUND");
    expectError(await get(`/notes/1234567890123456789/reactions`, early), 404, "NOTE_NOT_FOUND");
    expectError(await get(`/notes/${noteId}/reactions?before_id=abc`, early), 400, "INVALID_REQUEST");
  });

  it("is public as GET /notes/{id} is: the note's own visibility decides, for anonymous callers too", async () => {
    const anonymous = await get(`/notes/${noteId}/reactions`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.body).toHaveLength(100);
    expect(anonymous.body).toEqual((await get(`/notes/${noteId}/reactions`, author)).body);
    const secret = (await act.post(server, author, { content: "followers see this", visibility: "followers" })).id;
    expect((await get(`/notes/${secret}/reactions`, author)).status).toBe(200);
    expectError(await get(`/notes/${secret}`), 404, "NOTE_NOT_FOUND");
    expectError(await get(`/notes/${secret}/reactions`), 404, "NOTE_NOT_FOUND");
    // Credentials, when sent, are still checked.
    expectUnauthorized(
      await server.request("GET", `/notes/${noteId}/reactions`, { token: "not-a-token" }),
      "INVALID_TOKEN",
    );
  });
});

describe("GraphQL", () => {
  const gql = async (query: string, who?: TestAccount) => {
    const answer = await server.request("POST", "/graphql", { token: who?.token, body: { query } });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data;
  };

  it("counts, the caller's own, and a connection that pages every reaction", async () => {
    const fields = `reactionCount reactionCounts { emoji count } ownReaction { emoji reactedBy }`;
    const data = await gql(`{ note(id: "${noteId}") { ... on QueryNoteSuccess { data { ${fields} } } } }`, early);
    expect(data.note.data.reactionCount).toBe(FANS + 1);
    expect(data.note.data.reactionCounts).toHaveLength(4);
    expect(data.note.data.ownReaction).toEqual({ emoji: "🐢", reactedBy: early.id });

    const seen: string[] = [];
    let after: string | null = null;
    for (let round = 0; round < 10; round++) {
      const args: string = after ? `first: 40, after: "${after}"` : "first: 15";
      const page: {
        note: {
          data: {
            reactions: {
              edges: { node: { reactedBy: string } }[];
              pageInfo: { hasNextPage: boolean; endCursor: string };
            };
          };
        };
      } = await gql(
        `{ note(id: "${noteId}") { ... on QueryNoteSuccess { data { reactions(${args}) { ... on ReactionConnection { edges { node { reactedBy } } pageInfo { hasNextPage endCursor } } } } } } }`,
        early,
      );
      const { edges, pageInfo } = page.note.data.reactions;
      seen.push(...edges.map((e) => e.node.reactedBy));
      if (!pageInfo.hasNextPage) break;
      after = pageInfo.endCursor;
    }
    expect(seen).toHaveLength(FANS + 1);
    expect(new Set(seen).size).toBe(FANS + 1);
    expect(seen[0]).toBe(early.id);
  });

  it("pages a note's reactions for anonymous callers too, as the note's visibility allows", async () => {
    const reactionsOf = (id: string) =>
      gql(
        `{ note(id: "${id}") { ... on QueryNoteSuccess { data { reactions(first: 100) { ... on ReactionConnection { edges { node { reactedBy } } } } } }
          ... on DomainError { code } } }`,
      );
    expect((await reactionsOf(noteId)).note.data.reactions.edges).toHaveLength(100);
    const secret = (await act.post(server, author, { content: "followers only", visibility: "followers" })).id;
    expect((await reactionsOf(secret)).note).toEqual({ code: "NOTE_NOT_FOUND" });
  });

  it("first outside 1..100 is INVALID_REQUEST", async () => {
    const data = await gql(
      `{ note(id: "${noteId}") { ... on QueryNoteSuccess { data { reactions(first: 101) { ... on DomainError { code } } } } } }`,
      early,
    );
    expect(data.note.data.reactions.code).toBe("INVALID_REQUEST");
  });
});
