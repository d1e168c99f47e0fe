// Notes, reactions, bookmarks, follows and notifications through GraphQL, calling the same
// services as REST; and the N+1 guard: a page of 20 notes costs the same SQL as a page of 1.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countingApp } from "./support/counting.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "gn_alice");
  bob = await account(server, "gn_bob");
});
afterAll(() => server.close());

async function gql(query: string, variables: Record<string, unknown>, token?: string, app?: FastifyInstance) {
  const answer = await (app ?? server.app).inject({
    method: "POST",
    url: "/graphql",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    payload: JSON.stringify({ query, variables }),
  });
  const body = answer.json();
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}

const NOTE =
  "id content visibility cwComment renoteId replyToId author { name } reactions { ... on ReactionConnection { edges { node { emoji reactedBy } } } } reactionCount attachments { mime url }";

describe("notes through GraphQL", () => {
  it("creates, reads, renotes, replies to, reacts to and deletes a note like REST", async () => {
    const created = await gql(
      `mutation ($input: NoteInput!) { createNote(input: $input) { ... on MutationCreateNoteSuccess { data { ${NOTE} } } } }`,
      { input: { content: "hello @gn_bob", visibility: "public" } },
      alice.token,
    );
    const note = created.createNote.data;
    expect(note).toMatchObject({
      content: "hello @gn_bob",
      visibility: "public",
      author: { name: "@gn_alice@murmur.test" },
    });
    const rest = await server.request("GET", `/notes/${note.id}`);
    expect(rest.body.content).toBe("hello @gn_bob");

    const renoted = await gql(
      `mutation ($id: ID!) { renote(noteId: $id) { ... on MutationRenoteSuccess { data { renoteId content } } } }`,
      { id: note.id },
      bob.token,
    );
    expect(renoted.renote.data).toEqual({ renoteId: note.id, content: "" });
    const replied = await gql(
      `mutation ($id: ID!) { reply(noteId: $id, input: { content: "hi" }) { ... on MutationReplySuccess { data { replyToId } } } }`,
      { id: note.id },
      bob.token,
    );
    expect(replied.reply.data.replyToId).toBe(note.id);

    const reacted = await gql(
      `mutation ($id: ID!) { react(noteId: $id, emoji: "👍🏽") { ... on MutationReactSuccess { data { reactions { ... on ReactionConnection { edges { node { emoji reactedBy } } } } reactionCount reactionCounts { emoji count } ownReaction { emoji } } } } }`,
      { id: note.id },
      bob.token,
    );
    expect(reacted.react.data).toEqual({
      reactions: { edges: [{ node: { emoji: "👍🏽", reactedBy: bob.id } }] },
      reactionCount: 1,
      reactionCounts: [{ emoji: "👍🏽", count: 1 }],
      ownReaction: { emoji: "👍🏽" },
    });
    const again = await gql(
      `mutation ($id: ID!) { react(noteId: $id, emoji: "👍") { ... on DomainError { code } } }`,
      { id: note.id },
      bob.token,
    );
    expect(again.react.code).toBe("ALREADY_REACTED");

    const page = await gql(
      `{ notifications { ... on NotificationConnection { edges { node { type noteId content actor { ... on AccountActor { account { name } } } } } } } }`,
      {},
      alice.token,
    );
    const nodes = page.notifications.edges.map((e: { node: { type: string } }) => e.node);
    expect(nodes.map((n: { type: string }) => n.type)).toEqual(["reacted", "renoted"]);
    expect(nodes[0].actor).toEqual({ account: { name: "@gn_bob@murmur.test" } });

    const denied = await gql(
      `mutation ($id: ID!) { deleteNote(noteId: $id) { ... on DomainError { code } } }`,
      { id: note.id },
      bob.token,
    );
    expect(denied.deleteNote.code).toBe("NO_PERMISSION");
    const deleted = await gql(
      `mutation ($id: ID!) { deleteNote(noteId: $id) { ... on MutationDeleteNoteSuccess { data } } }`,
      { id: note.id },
      alice.token,
    );
    expect(deleted.deleteNote.data).toBe(true);
    const gone = await gql(`query ($id: ID!) { note(id: $id) { ... on DomainError { code } } }`, { id: note.id });
    expect(gone.note.code).toBe("NOTE_NOT_FOUND");
  });

  it("takes visibility as the Visibility enum; a value outside it is INVALID_VISIBILITY, as in REST", async () => {
    const result =
      "{ __typename ... on DomainError { code } ... on MutationCreateNoteSuccess { data { visibility } } }";
    const literal = await gql(
      `mutation { createNote(input: { content: "x", visibility: secret }) ${result} }`,
      {},
      alice.token,
    );
    expect(literal.createNote).toEqual({ __typename: "DomainError", code: "INVALID_VISIBILITY" });
    const variable = await gql(
      `mutation ($input: NoteInput!) { createNote(input: $input) ${result} }`,
      { input: { content: "x", visibility: "secret" } },
      alice.token,
    );
    expect(variable.createNote).toEqual({ __typename: "DomainError", code: "INVALID_VISIBILITY" });
    const rest = await server.request("POST", "/notes", {
      token: alice.token,
      body: { content: "x", visibility: "secret" },
    });
    expect(rest.body).toEqual({ error: "INVALID_VISIBILITY" });
    const known = await gql(
      `mutation { createNote(input: { content: "x", visibility: followers }) ${result} }`,
      {},
      alice.token,
    );
    expect(known.createNote).toEqual({ __typename: "MutationCreateNoteSuccess", data: { visibility: "followers" } });
    expect(await server.services.db.note.count({ where: { authorId: BigInt(alice.id), content: "x" } })).toBe(1);
  });

  it("loads renote and replyTo as notes; one the caller may not see is null, its id still given", async () => {
    const [erin, fred] = await Promise.all([account(server, "gn_erin"), account(server, "gn_fred")]);
    await server.request("POST", `/accounts/${erin.name}/follow`, { token: fred.token });
    const post = (token: string, url: string, body: unknown) => server.request("POST", url, { token, body });
    const secret = await post(erin.token, "/notes", { content: "followers only", visibility: "followers" });
    const reply = await post(fred.token, `/notes/${secret.body.id}/reply`, { content: "a public reply" });
    const open = await post(erin.token, "/notes", { content: "for all" });
    const renote = await post(fred.token, `/notes/${open.body.id}/renote`, {});
    const query = `query ($reply: ID!, $renote: ID!) {
      reply: note(id: $reply) { ... on QueryNoteSuccess { data { replyToId replyTo { id content } } } }
      renote: note(id: $renote) { ... on QueryNoteSuccess { data { renoteId renote { id content author { name } } } } }
    }`;
    const ids = { reply: reply.body.id, renote: renote.body.id };
    const anonymous = await gql(query, ids);
    expect(anonymous.reply.data).toEqual({ replyToId: secret.body.id, replyTo: null });
    expect(anonymous.renote.data).toEqual({
      renoteId: open.body.id,
      renote: { id: open.body.id, content: "for all", author: { name: "@gn_erin@murmur.test" } },
    });
    const follower = await gql(query, ids, fred.token);
    expect(follower.reply.data.replyTo).toEqual({ id: secret.body.id, content: "followers only" });
  });

  it("gives every timestamp as DateTime: ISO 8601 UTC with milliseconds, the instant REST gives", async () => {
    const created = await server.request("POST", "/notes", { token: alice.token, body: { content: "when" } });
    const data = await gql(`query ($id: ID!) { note(id: $id) { ... on QueryNoteSuccess { data { createdAt } } } }`, {
      id: created.body.id,
    });
    expect(data.note.data.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(data.note.data.createdAt).toBe(created.body.created_at);
  });

  it("follows and reads follow requests like REST", async () => {
    const carol = await account(server, "gn_carol");
    await server.request("PATCH", "/accounts/gn_carol", { token: carol.token, body: { locked: true } });
    const followed = await gql(
      `mutation { follow(name: "gn_carol") { ... on MutationFollowSuccess { data { pending } } } }`,
      {},
      alice.token,
    );
    expect(followed.follow.data.pending).toBe(true);
    const requests = await gql(
      `{ followRequests { ... on AccountConnection { edges { node { name } } } } }`,
      {},
      carol.token,
    );
    expect(requests.followRequests.edges).toEqual([{ node: { name: "@gn_alice@murmur.test" } }]);
    const accepted = await gql(
      `mutation { acceptFollowRequest(name: "gn_alice") { ... on MutationAcceptFollowRequestSuccess { data } } }`,
      {},
      carol.token,
    );
    expect(accepted.acceptFollowRequest.data).toBe(true);
    expect((await server.request("GET", "/accounts/gn_carol")).body.followed_count).toBe(1);
  });
});

describe("searchNotes", () => {
  it("answers what GET /search/notes answers, and INVALID_QUERY as a typed error", async () => {
    await server.request("POST", "/notes", { token: alice.token, body: { content: "searchable parrot 🦜" } });
    await server.request("POST", "/notes", { token: alice.token, body: { content: "another PARROT here" } });
    const rest = await server.request("GET", `/search/notes?query=${encodeURIComponent("parrot -another")}`);
    const data = await gql(
      `query ($q: String!) { searchNotes(query: $q) { ... on NoteConnection { edges { node { id content } } } } }`,
      { q: "parrot -another" },
    );
    const found = data.searchNotes.edges.map((e: { node: unknown }) => e.node);
    expect(found).toEqual(rest.body.map((n: { id: string; content: string }) => ({ id: n.id, content: n.content })));
    expect(found.map((n: { content: string }) => n.content)).toEqual(["searchable parrot 🦜"]);
    const bad = await gql(`{ searchNotes(query: "(parrot") { ... on DomainError { code } } }`, {});
    expect(bad.searchNotes.code).toBe("INVALID_QUERY");
  });
});

describe("no query per note", () => {
  it("answers a page of 20 bookmarked quotes and replies, with the notes they quote and answer, in as many SQL queries as a page of 2", async () => {
    const counting = await countingApp(server);
    const dave = await account(server, "gn_dave");
    const png = await image("png", 16, 16);
    const base = await server.request("POST", "/notes", { token: alice.token, body: { content: "the base" } });
    const page = `{ bookmarks { ... on NoteConnection { edges { node { ${NOTE} renote { id author { name } } replyTo { id content } } } } } }`;
    const queriesFor = async () => {
      let notes = 0;
      const { queries } = await counting.count(async () => {
        const data = await gql(page, {}, dave.token, counting.app);
        const nodes = data.bookmarks.edges.map((e: { node: Record<string, { id: string } | null> }) => e.node);
        expect(
          nodes.every((n: Record<string, { id: string } | null>) => (n.renote ?? n.replyTo)?.id === base.body.id),
        ).toBe(true);
        notes = nodes.length;
        return { statusCode: 200 };
      });
      return { queries, notes };
    };
    const bookmarkNew = async (n: number) => {
      const file = await uploadFile(server, alice, png, `p${n}.png`);
      // Quotes and replies by turns: a page loads the notes they refer to as well.
      const created = await server.request("POST", `/notes/${base.body.id}/${n % 2 ? "reply" : "renote"}`, {
        token: alice.token,
        body: { content: `note ${n}`, attachment_file_ids: [file.id] },
      });
      await server.request("POST", `/notes/${created.body.id}/reaction`, { token: bob.token, body: { emoji: "🎉" } });
      await server.request("POST", `/notes/${created.body.id}/bookmark`, { token: dave.token });
    };

    await bookmarkNew(0);
    await bookmarkNew(1);
    const one = await queriesFor();
    for (let n = 2; n < 20; n++) await bookmarkNew(n);
    const twenty = await queriesFor();
    console.log(`SQL queries for a GraphQL page of 2 notes: ${one.queries}; of 20 notes: ${twenty.queries}`);
    expect(one.notes).toBe(2);
    expect(twenty.notes).toBe(20);
    expect(twenty.queries).toBe(one.queries);
    await counting.close();
  });
});
