// Every timeline page is a fixed number of SQL queries, whatever its size: a page of 20 notes
// (each with an attachment and a reaction) costs what a page of 1 costs, over REST and GraphQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { type CountingApp, countingApp } from "./support/counting.ts";
import { type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let counting: CountingApp;
let author: TestAccount;
let reader: TestAccount;
let listId: string;
let png: Buffer;

async function post(n: number): Promise<void> {
  const file = await uploadFile(server, author, png, `f${n}.png`);
  const note = await act.post(server, author, { content: `note ${n}`, attachment_file_ids: [file.id] });
  await server.request("POST", `/notes/${note.id}/reaction`, { token: reader.token, body: { emoji: "🎉" } });
}

const get = (url: string) => () =>
  counting.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${reader.token}` } });
const graphqlHome = () =>
  counting.app.inject({
    method: "POST",
    url: "/graphql",
    headers: { authorization: `Bearer ${reader.token}`, "content-type": "application/json" },
    payload: JSON.stringify({
      query:
        "{ homeTimeline { ... on NoteConnection { edges { node { id author { name } reactions { ... on ReactionConnection { edges { node { emoji } } } } reactionCount reactionCounts { emoji count } attachments { url } } } } } }",
    }),
  });

const pages = () => ({
  "REST home": get("/timeline/home"),
  "REST global": get("/timeline/global"),
  "REST account": get(`/timeline/accounts/${author.id}`),
  "REST list": get(`/lists/${listId}/notes`),
  "GraphQL home": graphqlHome,
});

beforeAll(async () => {
  server = await startTestServer();
  counting = await countingApp(server);
  ({ alice: author, follower: reader } = await cast(server, { alice: "tq_author", follower: "tq_reader" }));
  png = await image("png", 16, 16);
  const list = await server.request("POST", "/lists", { token: reader.token, body: { title: "authors" } });
  listId = list.body.id;
  await server.request("POST", `/lists/${listId}`, { token: reader.token, body: { account_id: [author.id] } });
});
afterAll(async () => {
  await counting.close();
  await server.close();
});

describe("queries per timeline page", () => {
  it("are the same for pages of 1 and of 20 notes on every timeline", async () => {
    await post(0);
    const one: Record<string, number> = {};
    for (const [name, request] of Object.entries(pages())) {
      const { queries, status } = await counting.count(request);
      expect(status, name).toBe(200);
      one[name] = queries;
    }
    for (let n = 1; n < 20; n++) await post(n);
    const twenty: Record<string, number> = {};
    for (const [name, request] of Object.entries(pages())) twenty[name] = (await counting.count(request)).queries;
    console.table(Object.fromEntries(Object.keys(one).map((k) => [k, { "1 note": one[k], "20 notes": twenty[k] }])));
    expect(twenty).toEqual(one);
  });

  it("are one statement for the home page of an account following many, REST and GraphQL", async () => {
    // Past 200 followees the page is walked in SQL (src/domain/timelines/service.ts).
    await server.services.db.account.update({ where: { id: BigInt(reader.id) }, data: { followingCount: 1000 } });
    const rest = await counting.count(get("/timeline/home"));
    const graphql = await counting.count(graphqlHome);
    expect([rest.status, graphql.status]).toEqual([200, 200]);
    expect({ rest: rest.queries, graphql: graphql.queries }).toEqual({ rest: 1, graphql: 1 });
  });
});
