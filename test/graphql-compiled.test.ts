// GraphQL timeline pages answered by their compiled plans (src/graphql/compiled-pages.ts): the
// first request of a document goes through the executor, the same text again is answered by the
// plan, and the two answers must be the same JSON, member for member and in the same order, for
// every selection a plan takes, every kind of caller, paging and filters; refusals stay the
// executor's.
import type { Counter } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { SCENE_EMOJI, viralNote } from "./support/scenes.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let author: TestAccount;
let fan: TestAccount;
let stranger: TestAccount;
let listId: string;
let reactors: TestAccount[];

beforeAll(async () => {
  server = await startTestServer();
  author = await account(server, "gc_author");
  fan = await account(server, "gc_fan");
  stranger = await account(server, "gc_stranger");
  await act.follow(server, fan, author);
  const scene = await viralNote(server, author, fan, "gc_");
  const { viral, files } = scene;
  reactors = scene.reactors;
  await act.post(server, author, { content: "safe file", attachment_file_ids: [files[1].id] });
  await act.post(server, author, { content: "direct", visibility: "direct", send_to: fan.id });
  await act.post(server, author, { content: "followers only", visibility: "followers" });
  await act.post(server, author, { content: "home only", visibility: "home" });
  await act.post(server, fan, { content: "by the fan @gc_author" });
  await server.request("POST", `/notes/${viral.id}/reaction`, { token: fan.token, body: { emoji: "👍" } });
  const list = await server.request("POST", "/lists", { token: fan.token, body: { title: "mine" } });
  listId = list.body.id;
  expect(
    (await server.request("POST", `/lists/${listId}`, { token: fan.token, body: { account_id: [author.id] } })).status,
  ).toBe(200);
});
afterAll(() => server?.close());

let sent = 0;

async function graphql(
  query: string,
  who?: TestAccount,
  headers: Record<string, string> = {},
  variables?: Record<string, unknown>,
) {
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: {
      "content-type": "application/json",
      ...(who ? { authorization: `Bearer ${who.token}` } : {}),
      ...headers,
    },
    payload: JSON.stringify({ query, variables }),
  });
  return { status: answer.statusCode, type: answer.headers["content-type"], text: answer.body };
}

/** A JSON body as written (members named twice, -0), its query text `q`. */
type Body = (q: string) => string;

interface Answered {
  status: number;
  text: string;
}

async function post(payload: string, who: TestAccount): Promise<Answered> {
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: { "content-type": "application/json", authorization: `Bearer ${who.token}` },
    payload,
  });
  return { status: answer.statusCode, text: answer.body };
}

/** The same JSON, members in the same order. */
const canonical = (text: string) => JSON.stringify(JSON.parse(text));

/** How many pages of a compiled document `by` answered (GET /metrics' counter). */
async function answeredBy(by: "plan" | "executor"): Promise<number> {
  const counter = server.services.metrics.registry.getSingleMetric("murmur_graphql_compiled_pages_total");
  const { values } = await (counter as Counter).get();
  return values.find((v) => v.labels.answered_by === by)?.value ?? 0;
}

/**
 * A document (made new by a comment) through the executor, then again, through its plan if it
 * has one: the same answer. Gives the parsed answer and whether the plan answered.
 */
async function both(
  query: string,
  who?: TestAccount,
  headers?: Record<string, string>,
  variables?: Record<string, unknown>,
) {
  const text = `${query}\n# ${sent++}`;
  const executed = await graphql(text, who, headers, variables);
  const before = await answeredBy("plan");
  const planned = await graphql(text, who, headers, variables);
  expect(executed.status).toBe(200);
  expect({ status: planned.status, type: planned.type }).toEqual({ status: executed.status, type: executed.type });
  expect(canonical(planned.text)).toBe(canonical(executed.text));
  return { data: JSON.parse(planned.text).data, compiled: (await answeredBy("plan")) > before };
}

const ACCOUNT = "__typename id name nickname bio avatar header followedCount followingCount noteCount locked email";
const REACTION = "__typename id emoji reactedBy createdAt";
const PAGE_INFO = "__typename hasNextPage hasPreviousPage startCursor endCursor";
const EVERYTHING = `
  __typename id content cwComment visibility sendToId renoteId replyToId createdAt
  author { ${ACCOUNT} }
  reactionCount
  reactionCounts { __typename emoji count }
  ownReaction { ${REACTION} }
  reactions { ... on ReactionConnection { __typename edges { __typename cursor node { ${REACTION} } } pageInfo { ${PAGE_INFO} } } }
  few: reactions(first: 3) { ... on ReactionConnection { pageInfo { hasNextPage endCursor } edges { node { emoji } cursor } } }
  attachments { __typename id name authorId hash mime size nsfw url thumbnail }`;
const callers = () => [undefined, author, fan, stranger, reactors[0], reactors[23]];

describe("a compiled timeline page answers as the executor does", () => {
  it("the benchmark's home page, for the author and a follower", async () => {
    const query =
      "{ homeTimeline { ... on NoteConnection { edges { node { id content createdAt author { name nickname } reactions { ... on ReactionConnection { edges { node { emoji reactedBy } } } } reactionCount attachments { url mime } } } } } }";
    for (const who of [author, fan]) {
      const { data, compiled } = await both(query, who);
      expect(compiled).toBe(true);
      expect(data.homeTimeline.edges.length).toBeGreaterThanOrEqual(4);
    }
  });

  it("every field a plan takes, for every kind of caller, on the global and an account's timeline", async () => {
    for (const who of callers()) {
      for (const field of [
        "globalTimeline",
        'accountTimeline(name: "gc_author")',
        'accountTimeline(name: "@gc_author@murmur.test")',
      ]) {
        const query = `{ t: ${field} { __typename ... on DomainError { code } ... on NoteConnection { pageInfo { ${PAGE_INFO} } edges { __typename cursor node { ${EVERYTHING} } } } } }`;
        const { data, compiled } = await both(query, who);
        expect(compiled, `${field} as ${who?.name ?? "nobody"}`).toBe(true);
        expect(data.t.edges.length).toBeGreaterThanOrEqual(3);
      }
    }
    // The cases are there: the old own reaction, both kinds of file, counts, a second page of reactions.
    const { data } = await both(
      `{ globalTimeline { ... on NoteConnection { edges { node { ${EVERYTHING} } } } } }`,
      reactors[0],
    );
    const viral = data.globalTimeline.edges
      .map((e: { node: unknown }) => e.node)
      .find((n: { reactionCount: number }) => n.reactionCount === 25);
    expect(viral.ownReaction.reactedBy).toBe(reactors[0].id);
    expect(viral.reactions.edges).toHaveLength(20);
    expect(viral.reactions.pageInfo.hasNextPage).toBe(true);
    expect(viral.few.edges).toHaveLength(3);
    expect(viral.reactionCounts.length).toBe(SCENE_EMOJI.length);
    expect(viral.attachments.map((f: { thumbnail: string | null }) => f.thumbnail === null)).toEqual([true, false]);
  });

  it("home and list pages with paging and filters, fragments and aliases", async () => {
    const fragment = "fragment N on Note { id author { ...A } createdAt } fragment A on Account { name }";
    const first = await both(
      `{ homeTimeline(first: 2) { ... on NoteConnection { pageInfo { endCursor hasNextPage } edges { node { ...N } } } } } ${fragment}`,
      fan,
    );
    expect(first.compiled).toBe(true);
    expect(first.data.homeTimeline.pageInfo.hasNextPage).toBe(true);
    const after = first.data.homeTimeline.pageInfo.endCursor;
    const queries = [
      `{ homeTimeline(first: 2, after: "${after}") { ... on NoteConnection { pageInfo { endCursor hasNextPage } edges { node { ...N } } } } } ${fragment}`,
      `{ page: homeTimeline(after: "1") { ... on NoteConnection { pageInfo { ${PAGE_INFO} } edges { cursor } } } }`,
      `{ homeTimeline(hasAttachment: true) { ... on NoteConnection { edges { node { id attachments { id nsfw } } } } } }`,
      `{ homeTimeline(noNsfw: true, hasAttachment: true) { ... on NoteConnection { edges { node { id } } } } }`,
      `{ listTimeline(listId: "${listId}") { ... on NoteConnection { edges { node { ${EVERYTHING} } } } } }`,
      `query Named { homeTimeline { ...C } } fragment C on NoteConnection { edges { node { i: id c: content } } }`,
    ];
    for (const query of queries) expect((await both(query, fan)).compiled, query).toBe(true);
  });

  it("takes variables, each set of values a plan of its own, their defaults too", async () => {
    const query = `query Page($first: Int = 3, $after: String, $media: Boolean, $list: ID!, $shown: Int) {
      listTimeline(listId: $list, first: $first, after: $after, hasAttachment: $media) {
        ... on NoteConnection { pageInfo { endCursor hasNextPage } edges { node { id reactions(first: $shown) { ... on ReactionConnection { pageInfo { hasNextPage } edges { cursor } } } } } }
      }
    }`;
    const first = await both(query, fan, {}, { list: listId });
    expect(first.compiled).toBe(true);
    expect(first.data.listTimeline.edges).toHaveLength(3);
    const after = first.data.listTimeline.pageInfo.endCursor;
    for (const variables of [
      { list: listId, first: 2, after },
      { list: listId, media: true, shown: 2 },
      { list: listId, first: null, after: null, media: null },
    ]) {
      expect((await both(query, fan, {}, variables)).compiled, JSON.stringify(variables)).toBe(true);
    }
    // Values the executor refuses are its to answer, with its errors.
    for (let i = 0; i < 2; i++) {
      const refused = await graphql(query, fan, {}, { list: listId, first: "many" });
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text).errors).toBeDefined();
    }
  });

  it("answers in the type yoga would for each Accept", async () => {
    const query = "{ globalTimeline { ... on NoteConnection { edges { node { id } } } } }";
    for (const accept of [
      "application/graphql-response+json, application/json",
      "application/json",
      "*/*",
      "application/*",
    ]) {
      const { compiled } = await both(query, fan, { accept });
      expect(compiled, accept).toBe(true);
    }
  });

  it("leaves to the executor what a plan does not take, and answers the same", async () => {
    const queries = [
      "{ globalTimeline { ... on NoteConnection { edges { node { id renote { id } } } } } }",
      '{ globalTimeline { ... on NoteConnection { edges { node { id reactions(after: "1") { ... on ReactionConnection { edges { cursor } } } } } } } }',
      "{ globalTimeline { ... on NoteConnection { edges { node { id } } } } globalTimeline2: globalTimeline { __typename } }",
      "{ globalTimeline { ... on NoteConnection { edges { node { id id } } } } }",
      "{ globalTimeline { ... on NoteConnection @include(if: true) { edges { node { id } } } } }",
    ];
    for (const query of queries) expect((await both(query, fan)).compiled, query).toBe(false);
  });

  it("leaves refusals to the executor: missing credentials, a forged token, a list one may not read, a first out of range", async () => {
    const home =
      "{ homeTimeline { __typename ... on DomainError { code } ... on NoteConnection { edges { cursor } } } }";
    const list = `{ listTimeline(listId: "${listId}") { __typename ... on DomainError { code } ... on NoteConnection { edges { cursor } } } }`;
    const none = "{ homeTimeline(first: 0) { __typename ... on DomainError { code } } }";
    const refusals: [string, TestAccount | undefined][] = [
      [home, undefined],
      [home, { ...fan, token: `${fan.token}x` }],
      [list, stranger],
      [none, fan],
    ];
    for (const [query, who] of refusals) {
      // Its plan is made for the fan, then the refused caller is answered as the executor answers it.
      const text = `${query}\n# ${sent++}`;
      expect((await graphql(text, fan)).status).toBe(200);
      await graphql(text, fan);
      const refused = await answeredBy("executor");
      const answer = await graphql(text, who);
      expect(await answeredBy("executor"), query).toBe(refused + 1);
      const executed = await graphql(`${text} `, who);
      expect({ status: answer.status, body: canonical(answer.text) }).toEqual({
        status: executed.status,
        body: canonical(executed.text),
      });
    }
  });

  it("keys a plan by the request as the executor reads it: what it refuses is refused, what means the same is answered the same", async () => {
    const page = "{ ... on NoteConnection { edges { node { id content } } } }";
    const json = JSON.stringify;
    // `warm` is a request of the same document under a key of its own, which the executor answers
    // (yoga's validation, variables' costs with it, is kept by document: a variable is then said
    // wrong by graphql-jit, in its words).
    const groups: { query: string; learnt: Body; warm: Body; others: Record<string, Body>; refused: string[] }[] = [
      {
        query: `{ homeTimeline(first: 2) ${page} }`,
        learnt: (q) => json({ query: q }),
        warm: (q) => json({ query: q, variables: { warm: 1 } }),
        others: {
          "operationName empty": (q) => json({ query: q, operationName: "" }),
          "operationName null": (q) => json({ query: q, operationName: null }),
          "variables null": (q) => json({ query: q, variables: null }),
          "variables {}": (q) => json({ query: q, variables: {} }),
          "both null": (q) => json({ query: q, variables: null, operationName: null }),
          "a variable not declared": (q) => json({ query: q, variables: { first: 3 } }),
          "an empty name and no variables": (q) => json({ query: q, operationName: "", variables: {} }),
        },
        refused: ["operationName empty", "an empty name and no variables"],
      },
      {
        query: `query ($first: Int) { homeTimeline(first: $first) ${page} }`,
        learnt: (q) => json({ query: q, variables: { first: 2 } }),
        warm: (q) => json({ query: q, variables: { first: 2, warm: 1 } }),
        others: {
          "2.0": (q) => `{"query":${json(q)},"variables":{"first":2.0}}`,
          "2e0": (q) => `{"query":${json(q)},"variables":{"first":2e0}}`,
          "0": (q) => `{"query":${json(q)},"variables":{"first":0}}`,
          "-0": (q) => `{"query":${json(q)},"variables":{"first":-0}}`,
          // Of members named twice JSON.parse keeps the last, for the executor as for the key.
          "variables twice, the learnt last": (q) =>
            `{"variables":{"first":3},"query":${json(q)},"variables":{"first":2}}`,
          "variables twice, the learnt first": (q) =>
            `{"query":${json(q)},"variables":{"first":2},"variables":{"first":"two"}}`,
          "first twice": (q) => `{"query":${json(q)},"variables":{"first":2,"first":"two"}}`,
          "query twice": (q) => `{"query":"{ nothing }","variables":{"first":2},"query":${json(q)}}`,
          "query twice, another last": (q) => `{"query":${json(q)},"variables":{"first":2},"query":"{ nothing }"}`,
          "operationName empty": (q) => json({ query: q, variables: { first: 2 }, operationName: "" }),
        },
        refused: [
          "variables twice, the learnt first",
          "first twice",
          "query twice, another last",
          "operationName empty",
        ],
      },
      {
        // A NUL inside a comment: joined with NUL, the name and the text could be split at it.
        query: `query P { homeTimeline(first: 2) ${page} } #\u0000x`,
        learnt: (q) => json({ query: q, operationName: "P" }),
        warm: (q) => json({ query: q, operationName: "P", variables: { warm: 1 } }),
        others: {
          "split at the NUL": (q) => {
            const [before, after] = q.split("\u0000");
            return json({ query: after, operationName: `P\u0000${before}` });
          },
          "NUL ending the name": (q) => json({ query: q, operationName: "P\u0000" }),
          "operationName null": (q) => json({ query: q, operationName: null }),
          "operationName empty": (q) => json({ query: q, operationName: "" }),
        },
        refused: ["split at the NUL", "NUL ending the name", "operationName empty"],
      },
    ];
    for (const { query, learnt, warm, others, refused } of groups) {
      const text = `${query}\n# ${sent++}`;
      // Each request's own answer from the executor: the same request with a text no plan was
      // learnt for, once the executor has answered that text.
      const executed: Record<string, Answered> = {};
      for (const [name, body] of Object.entries(others)) {
        const own = `${text}\n# ${sent++}`;
        expect((await post(warm(own), fan)).status).toBe(200);
        executed[name] = await post(body(own), fan);
      }
      for (const name of refused) {
        expect(executed[name].status, `${name}: ${executed[name].text}`).toBe(400);
        expect(JSON.parse(executed[name].text).data, name).toBeUndefined();
      }
      // The plan is learnt, and answers.
      expect((await post(learnt(text), fan)).status).toBe(200);
      let planned = await answeredBy("plan");
      expect((await post(learnt(text), fan)).status).toBe(200);
      expect(await answeredBy("plan"), query).toBe(++planned);
      for (const [name, body] of Object.entries(others)) {
        const answer = await post(body(text), fan);
        expect({ status: answer.status, text: canonical(answer.text) }, name).toEqual({
          status: executed[name].status,
          text: canonical(executed[name].text),
        });
        if (refused.includes(name)) expect(await answeredBy("plan"), `${name}: refused, not planned`).toBe(planned);
        planned = await answeredBy("plan");
      }
    }
    // graphql-jit reads a variable named as a member of every object (toString) from the
    // prototype: refused, however often asked, and so never planned.
    const inherited = json({ query: "query ($toString: Int = 2) { homeTimeline(first: $toString) { __typename } }" });
    const planned = await answeredBy("plan");
    for (let i = 0; i < 3; i++) expect((await post(inherited, fan)).status).toBe(400);
    expect(await answeredBy("plan")).toBe(planned);
  });

  it("shows a note written after the plan was made, and not one deleted", async () => {
    const query = "{ homeTimeline(first: 1) { ... on NoteConnection { edges { node { id content } } } } }";
    await both(query, fan);
    const note = await act.post(server, author, { content: "newer" });
    const newest = JSON.parse((await graphql(`${query}\n# ${sent - 1}`, fan)).text);
    expect(newest.data.homeTimeline.edges[0].node).toEqual({ id: note.id, content: "newer" });
    await server.request("DELETE", `/notes/${note.id}`, { token: author.token });
    const after = JSON.parse((await graphql(`${query}\n# ${sent - 1}`, fan)).text);
    expect(after.data.homeTimeline.edges[0].node.id).not.toBe(note.id);
  });
});
