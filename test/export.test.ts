// GET /accounts/{name}/export (docs/accounts.md#export): the owner's data as one JSON document,
// streamed, held to openapi.json's AccountExport; others 403 NO_PERMISSION, unknown 404; GraphQL's
// exportAccount gives the same document.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { checkAnswer } from "./support/document-check.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const ok = (answer: Answer, status: number) => expect(answer.status, JSON.stringify(answer.body)).toBe(status);

async function exported(who: TestAccount, name = who.name): Promise<Answer> {
  return server.request("GET", `/accounts/${name}/export`, { token: who.token });
}

describe("GET /accounts/{name}/export", () => {
  it("holds the profile, notes, bookmarks, follows, followers, blocks, mutes, lists, reactions and drive files", async () => {
    const [eve, fay, gus, hal] = await Promise.all(["eve", "fay", "gus", "hal"].map((n) => account(server, n)));
    const file = await uploadFile(server, eve, await image("png", 8, 8), "pic.png");
    const n1 = await act.post(server, eve, { content: "first", attachment_file_ids: [file.id] });
    const f1 = await act.post(server, fay, { content: "fay's" });
    const r1 = (await server.request("POST", `/notes/${f1.id}/reply`, { token: eve.token, body: { content: "re" } }))
      .body;
    ok(await server.request("POST", `/notes/${f1.id}/bookmark`, { token: eve.token, body: {} }), 200);
    ok(await server.request("POST", `/notes/${f1.id}/reaction`, { token: eve.token, body: { emoji: "🎉" } }), 200);
    await act.follow(server, eve, fay);
    await act.follow(server, gus, eve);
    ok(await server.request("POST", "/accounts/hal/block", { token: eve.token, body: {} }), 204);
    ok(await server.request("POST", "/accounts/gus/mute", { token: eve.token, body: {} }), 204);
    const list = (await server.request("POST", "/lists", { token: eve.token, body: { title: "pals", public: true } }))
      .body;
    ok(await server.request("POST", `/lists/${list.id}`, { token: eve.token, body: { account_id: [fay.id] } }), 200);

    const answer = await exported(eve);
    ok(answer, 200);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    // Streamed past Fastify's send path: held to openapi.json here.
    expect(checkAnswer("GET", "/accounts/eve/export", 200, answer.headers, JSON.stringify(answer.body))).toEqual([]);
    const doc = answer.body;
    expect(doc.profile).toMatchObject({
      id: eve.id,
      name: "@eve@murmur.test",
      email: eve.email,
      followed_count: 1,
      following_count: 1,
      note_count: 2,
    });
    expect(doc.notes.map((n: { id: string }) => n.id)).toEqual([n1.id, r1.id]);
    expect(doc.notes[0]).toMatchObject({ content: "first", visibility: "public", attachment_ids: [file.id] });
    expect(doc.notes[1]).toMatchObject({ content: "re", reply_to: f1.id });
    expect(doc.bookmarks.map((b: { note_id: string }) => b.note_id)).toEqual([f1.id]);
    expect(doc.follows.map((f: { account: { id: string } }) => f.account.id)).toEqual([fay.id]);
    expect(doc.followers.map((f: { account: { id: string } }) => f.account.id)).toEqual([gus.id]);
    expect(doc.blocks.map((f: { account: { id: string } }) => f.account.id)).toEqual([hal.id]);
    expect(doc.mutes.map((f: { account: { id: string } }) => f.account.id)).toEqual([gus.id]);
    expect(doc.lists).toEqual([
      expect.objectContaining({
        id: list.id,
        title: "pals",
        public: true,
        assignees: [expect.objectContaining({ id: fay.id })],
      }),
    ]);
    expect(doc.reactions).toEqual([expect.objectContaining({ note_id: f1.id, emoji: "🎉" })]);
    expect(doc.drive_files).toEqual([
      expect.objectContaining({ id: file.id, url: file.url, thumbnail: file.thumbnail, mime: "image/png" }),
    ]);
    expect(doc.drive_files[0].size).toBeGreaterThan(0);

    // GraphQL: the same document.
    const gql = await server.request("POST", "/graphql", {
      token: eve.token,
      body: { query: `{ exportAccount(name: "eve") { __typename ... on QueryExportAccountSuccess { data } } }` },
    });
    const { exported_at: _a, ...rest } = gql.body.data.exportAccount.data;
    const { exported_at: _b, ...restRest } = doc;
    expect(rest).toEqual(restRest);
  });

  it("is its owner's only: another account 403 NO_PERMISSION, no credentials 401, an unknown account 404", async () => {
    const [ida, jon] = await Promise.all([account(server, "ida"), account(server, "jon", "admin")]);
    expect((await exported(jon, "ida")).body).toEqual({ error: "NO_PERMISSION" });
    expect((await exported(jon, "ida")).status).toBe(403);
    const anonymous = await server.request("GET", "/accounts/ida/export");
    expect(anonymous.status).toBe(401);
    const unknown = await exported(ida, "no-such-account");
    expect({ status: unknown.status, body: unknown.body }).toEqual({
      status: 404,
      body: { error: "ACCOUNT_NOT_FOUND" },
    });
    const gql = await server.request("POST", "/graphql", {
      token: jon.token,
      body: { query: `{ exportAccount(name: "ida") { __typename ... on DomainError { code } } }` },
    });
    expect(gql.body.data.exportAccount).toEqual({ __typename: "DomainError", code: "NO_PERMISSION" });
    const gqlUnknown = await server.request("POST", "/graphql", {
      token: ida.token,
      body: { query: `{ exportAccount(name: "no-such-account") { __typename ... on DomainError { code } } }` },
    });
    expect(gqlUnknown.body.data.exportAccount).toEqual({ __typename: "DomainError", code: "ACCOUNT_NOT_FOUND" });
    const gqlAnonymous = await server.request("POST", "/graphql", {
      body: { query: `{ exportAccount(name: "ida") { __typename } }` },
    });
    expect([gqlAnonymous.status, gqlAnonymous.body.errors[0].extensions.code]).toEqual([401, "UNAUTHORIZED"]);
  });

  it("pages through an account of 1,200 notes (more than one page of each read)", async () => {
    const kim = await account(server, "kim");
    const { db, ids } = server.services;
    const authorId = BigInt(kim.id);
    const noteIds = Array.from({ length: 1_200 }, () => ids.next());
    await db.note.createMany({ data: noteIds.map((id, i) => ({ id, authorId, content: `n${i}` })) });
    const doc = (await exported(kim)).body;
    expect(doc.notes.map((n: { id: string }) => n.id)).toEqual(noteIds.map(String));
  });
});
