// Reports (docs/accounts.md#reports): an account reports another with a comment and notes of its;
// every moderator and admin gets a `reported` notification from the system; moderators list
// them (open ones by default, newest first, paged) and resolve them; the operator CLI lists them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { follow, post } from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { expectError } from "./support/expect.ts";
import { account, type TestAccount } from "./support/fixtures.ts";
import { gql as graphql } from "./support/graphql.ts";
import { run } from "./support/process.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openSse } from "./support/sse.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
let carol: TestAccount;
let mod: TestAccount;
let admin: TestAccount;
let bobPublic: string;
let bobFollowers: string;

beforeAll(async () => {
  server = await startTestServer();
  const names = { alice: "rp_alice", bob: "rp_bob", stranger: "rp_carol", moderator: "rp_mod" };
  ({ alice, bob, stranger: carol, moderator: mod } = await cast(server, names));
  admin = await account(server, "rp_admin", "admin");
  bobPublic = (await post(server, bob, { content: "something rude" })).id;
  bobFollowers = (await post(server, bob, { content: "for followers", visibility: "followers" })).id;
});
afterAll(() => server.close());

const report = (who: TestAccount | undefined, name: string, body: unknown) =>
  server.request("POST", `/accounts/${name}/report`, { token: who?.token, body });

async function written() {
  const { db } = server.services;
  return [await db.report.count(), await db.notification.count({ where: { type: "reported" } })];
}

describe("POST /accounts/{name}/report", () => {
  it("refuses what it must, writing nothing", async () => {
    const refusals: [TestAccount | undefined, string, unknown, number, string][] = [
      [undefined, "rp_bob", {}, 401, "UNAUTHORIZED"],
      [alice, "rp_alice", {}, 400, "INVALID_REQUEST"],
      [alice, "rp_nobody", {}, 404, "ACCOUNT_NOT_FOUND"],
      [alice, "rp_bob", { comment: "😀".repeat(1001) }, 400, "INVALID_REQUEST"],
      [alice, "rp_bob", { comment: 5 }, 400, "INVALID_REQUEST"],
      [alice, "rp_bob", { note_ids: Array(21).fill(bobPublic) }, 400, "INVALID_REQUEST"],
      [alice, "rp_bob", { note_ids: ["not a note"] }, 404, "NOTE_NOT_FOUND"],
      [alice, "rp_bob", { note_ids: ["123"] }, 404, "NOTE_NOT_FOUND"],
      // Not alice's to see, and not carol's note.
      [alice, "rp_bob", { note_ids: [bobPublic, bobFollowers] }, 404, "NOTE_NOT_FOUND"],
      [alice, "rp_carol", { note_ids: [bobPublic] }, 404, "NOTE_NOT_FOUND"],
    ];
    for (const [who, name, body, status, code] of refusals) {
      const answer = await report(who, name, body);
      expectError(answer, status, code);
    }
    expect(await written()).toEqual([0, 0]);
  });

  it("answers 201 with the report's id and tells every moderator and admin, from the system", async () => {
    // 1,000 characters are code points: 2,000 UTF-16 units here.
    const comment = "😀".repeat(1000);
    const created = await report(alice, "rp_bob", { comment, note_ids: [bobPublic, bobPublic] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^[0-9]{1,20}$/) });
    const stored = await server.services.db.report.findUniqueOrThrow({ where: { id: BigInt(created.body.id) } });
    expect(stored).toMatchObject({ comment, noteIds: [BigInt(bobPublic)], resolved: false, resolvedAt: null });
    for (const who of [mod, admin]) {
      const { notifications } = (await server.request("GET", "/notifications", { token: who.token })).body;
      expect(notifications).toEqual([
        {
          id: expect.any(String),
          type: "reported",
          actor: { type: "system", system: {} },
          reportId: created.body.id,
          createdAt: expect.any(String),
        },
      ]);
    }
    for (const who of [alice, bob, carol]) {
      const { notifications } = (await server.request("GET", "/notifications", { token: who.token })).body;
      expect(notifications.filter((n: { type: string }) => n.type === "reported")).toEqual([]);
    }
    // A follower may name a followers-only note; no comment, no notes, is a report too.
    await follow(server, carol, bob);
    expect((await report(carol, "rp_bob", { note_ids: [bobFollowers] })).status).toBe(201);
    expect((await report(carol, "rp_alice", {})).status).toBe(201);
  });

  it("reaches a moderator's notification stream as a system notification", async () => {
    const address = await server.app.listen({ port: 0, host: "127.0.0.1" });
    const stream = await openSse(`${address}/streaming/notifications`, { authorization: `Bearer ${mod.token}` });
    try {
      expect(stream.status).toBe(200);
      const created = await report(carol, "rp_bob", { comment: "live" });
      const event = await stream.event(0);
      expect(event.event).toBe("notification");
      expect(JSON.parse(event.data)).toMatchObject({
        type: "reported",
        actor: { type: "system", system: {} },
        reportId: created.body.id,
      });
    } finally {
      stream.close();
    }
  });
});

describe("GET /reports and POST /reports/{id}/resolve", () => {
  const list = (query = "", who = mod) => server.request("GET", `/reports${query}`, { token: who.token });
  const resolve = (id: string, who = mod) =>
    server.request("POST", `/reports/${id}/resolve`, { token: who.token, body: {} });

  it("are for moderators only", async () => {
    for (const answer of [await list("", alice), await resolve("1", alice)]) {
      expect([answer.status, answer.body]).toEqual([403, { error: "NO_PERMISSION" }]);
    }
    const anonymous = await server.request("GET", "/reports");
    expect([anonymous.status, anonymous.body]).toEqual([401, { error: "UNAUTHORIZED" }]);
  });

  it("lists open reports newest first, in full", async () => {
    const answer = await list();
    expect(answer.status).toBe(200);
    expect(answer.body.map((r: { comment: string }) => r.comment)).toEqual(["live", "", "", "😀".repeat(1000)]);
    const summary = (who: TestAccount) => ({
      id: who.id,
      name: `@${who.name}@murmur.test`,
      nickname: who.name,
      avatar: expect.any(String),
    });
    expect(answer.body[2]).toEqual({
      id: expect.any(String),
      reporter: summary(carol),
      account: summary(bob),
      comment: "",
      note_ids: [bobFollowers],
      created_at: expect.any(String),
      resolved: false,
      resolved_at: null,
    });
  });

  it("pages 40 at a time by before_id, NOTHING_LEFT past the end", async () => {
    for (let i = 0; i < 40; i++) expect((await report(alice, "rp_carol", { comment: `paged ${i}` })).status).toBe(201);
    const first = await list();
    expect(first.body).toHaveLength(40);
    expect(first.body[0].comment).toBe("paged 39");
    const second = await list(`?before_id=${first.body.at(-1).id}`);
    expect(first.body.at(-1).comment).toBe("paged 0");
    expect(second.body.map((r: { comment: string }) => r.comment)).toEqual(["live", "", "", "😀".repeat(1000)]);
    const past = await list(`?before_id=${second.body.at(-1).id}`);
    expect([past.status, past.body]).toEqual([404, { error: "NOTHING_LEFT" }]);
  });

  it("resolves a report once and for all: it leaves the open ones for the resolved ones", async () => {
    const [newest] = (await list()).body;
    expect(await resolve(newest.id)).toMatchObject({ status: 204, body: "" });
    const resolvedAt = (await server.services.db.report.findUniqueOrThrow({ where: { id: BigInt(newest.id) } }))
      .resolvedAt;
    expect(await resolve(newest.id)).toMatchObject({ status: 204 });
    expect((await list()).body[0].id).not.toBe(newest.id);
    const resolved = (await list("?resolved=true")).body;
    expect(resolved).toEqual([
      { ...newest, resolved: true, resolved_at: resolvedAt?.toISOString() ?? "resolved_at unset" },
    ]);
    expect((await list("?resolved=false")).body).toHaveLength(40);
    for (const id of ["123", "not-an-id"]) {
      const unknown = await resolve(id);
      expect([unknown.status, unknown.body]).toEqual([404, { error: "REPORT_NOT_FOUND" }]);
    }
  });
});

describe("GraphQL", () => {
  const gql = (query: string, variables: Record<string, unknown>, who: TestAccount) =>
    graphql(server, query, variables, who);
  const REPORT = `mutation ($name: String!, $comment: String, $noteIds: [ID!]) {
    report(name: $name, comment: $comment, noteIds: $noteIds) {
      ... on MutationReportSuccess { data } ... on DomainError { code } } }`;
  const REPORTS = `query ($resolved: Boolean, $first: Int, $after: String) {
    reports(resolved: $resolved, first: $first, after: $after) {
      ... on ReportConnection { edges { node { id comment noteIds resolved resolvedAt reporter { name } account { name } } }
        pageInfo { hasNextPage endCursor } }
      ... on DomainError { code } } }`;
  const RESOLVE = `mutation ($id: ID!) {
    resolveReport(id: $id) { ... on MutationResolveReportSuccess { data } ... on DomainError { code } } }`;

  it("report, reports and resolveReport call the same services, with the same codes", async () => {
    const created = await gql(REPORT, { name: "rp_bob", comment: "by graphql", noteIds: [bobPublic] }, alice);
    const id = created.report.data;
    expect(id).toMatch(/^[0-9]+$/);
    expect((await gql(REPORT, { name: "rp_bob", noteIds: [bobFollowers] }, alice)).report).toEqual({
      code: "NOTE_NOT_FOUND",
    });
    expect((await gql(REPORT, { name: "rp_alice" }, alice)).report).toEqual({ code: "INVALID_REQUEST" });
    const page = (await gql(REPORTS, { first: 2 }, mod)).reports;
    expect(page.edges[0].node).toEqual({
      id,
      comment: "by graphql",
      noteIds: [bobPublic],
      resolved: false,
      resolvedAt: null,
      reporter: { name: "@rp_alice@murmur.test" },
      account: { name: "@rp_bob@murmur.test" },
    });
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = (await gql(REPORTS, { first: 2, after: page.pageInfo.endCursor }, mod)).reports;
    // "paged 39" was resolved: the open ones go on with "paged 38", then "paged 37".
    expect(next.edges[0].node.comment).toBe("paged 37");
    expect((await gql(REPORTS, {}, alice)).reports).toEqual({ code: "NO_PERMISSION" });
    expect((await gql(RESOLVE, { id }, alice)).resolveReport).toEqual({ code: "NO_PERMISSION" });
    expect((await gql(RESOLVE, { id }, admin)).resolveReport).toEqual({ data: true });
    expect((await gql(RESOLVE, { id: "123" }, mod)).resolveReport).toEqual({ code: "REPORT_NOT_FOUND" });
    const resolved = (await gql(REPORTS, { resolved: true }, mod)).reports.edges.map(
      (e: { node: { id: string } }) => e.node.id,
    );
    expect(resolved).toContain(id);
    const open = (await gql(REPORTS, { resolved: false }, mod)).reports.edges.map(
      (e: { node: { id: string; resolved: boolean } }) => e.node,
    );
    expect(open.length).toBeGreaterThan(0);
    expect(open.some((r: { id: string; resolved: boolean }) => r.id === id || r.resolved)).toBe(false);
    // The moderator's notification, with its system actor and the report's id.
    const notified = await gql(
      `{ notifications(first: 1) { ... on NotificationConnection { edges { node {
        type reportId actor { __typename ... on SystemActor { system } } } } } } }`,
      {},
      mod,
    );
    expect(notified.notifications.edges[0].node).toEqual({
      type: "reported",
      reportId: id,
      actor: { __typename: "SystemActor", system: true },
    });
  });

  it("report refuses what REST refuses, writing nothing", async () => {
    const before = await written();
    const refusals: [string, Record<string, unknown>, string][] = [
      ["rp_alice", {}, "INVALID_REQUEST"],
      ["rp_nobody", {}, "ACCOUNT_NOT_FOUND"],
      ["rp_bob", { comment: "😀".repeat(1001) }, "INVALID_REQUEST"],
      ["rp_bob", { noteIds: Array(21).fill(bobPublic) }, "INVALID_REQUEST"],
      ["rp_bob", { noteIds: ["not a note"] }, "NOTE_NOT_FOUND"],
      ["rp_bob", { noteIds: ["123"] }, "NOTE_NOT_FOUND"],
      ["rp_bob", { noteIds: [bobPublic, bobFollowers] }, "NOTE_NOT_FOUND"],
      ["rp_carol", { noteIds: [bobPublic] }, "NOTE_NOT_FOUND"],
    ];
    for (const [name, variables, code] of refusals) {
      expect((await gql(REPORT, { name, ...variables }, alice)).report, JSON.stringify(variables).slice(0, 80)).toEqual(
        { code },
      );
    }
    const anonymous = await server.request("POST", "/graphql", {
      body: { query: REPORT, variables: { name: "rp_bob" } },
    });
    expect([anonymous.status, anonymous.body.errors[0].extensions.code]).toEqual([401, "UNAUTHORIZED"]);
    expect(await written()).toEqual(before);
    // 1,000 characters, code points, are one report, and one notification each for rp_mod and rp_admin.
    expect((await gql(REPORT, { name: "rp_bob", comment: "😀".repeat(1000) }, alice)).report.data).toMatch(/^[0-9]+$/);
    expect(await written()).toEqual([before[0] + 1, before[1] + 2]);
  });
});

describe("operator CLI", () => {
  it("`reports` lists the open reports, newest first", async () => {
    const env = { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, PUBLIC_URL: "http://murmur.test" };
    const result = await run("src/cli/main.ts", ["reports"], env);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n");
    const open = await server.services.db.report.findMany({ where: { resolved: false }, orderBy: { id: "desc" } });
    expect(lines.map((line) => line.split("\t")[0])).toEqual(open.map((r) => r.id.toString()));
    expect(lines.find((line) => line.includes("paged 7"))).toMatch(/\trp_alice -> rp_carol\t"paged 7"$/);
    expect(lines.find((line) => line.includes(bobFollowers))).toContain(`rp_carol -> rp_bob notes ${bobFollowers}`);
  });
});
