// Logging out (docs/accounts.md#sessions): POST /logout ends one session; DELETE /sessions ends
// every session of the caller and refuses every authorization token issued before it, on every
// instance (two servers on one database here, each with its own cache of callers), while a login
// right after works. GraphQL's logout and revokeSessions are the same services.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, login } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  const key = randomBytes(32).toString("base64");
  a = await startTestServer({ TOKEN_SIGNING_KEY: key });
  b = await startTestServer({ TOKEN_SIGNING_KEY: key, WORKER_ID: "2" }, a.databaseUrl);
});

afterAll(async () => {
  await b?.close();
  await a?.close();
});

async function until(check: () => Promise<boolean>, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("waited in vain");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("POST /logout", () => {
  it("revokes its refresh token, which then refreshes nothing", async () => {
    const ann = await account(a, "ann");
    const loggedOut = await a.request("POST", "/logout", { body: { refresh_token: ann.refreshToken } });
    expect(loggedOut.status).toBe(204);
    const refreshed = await b.request("POST", "/refresh", { body: { refresh_token: ann.refreshToken } });
    expect(refreshed.body).toEqual({ error: "INVALID_TOKEN" });
    const again = await a.request("POST", "/logout", { body: { refresh_token: ann.refreshToken } });
    expect(again.body).toEqual({ error: "INVALID_TOKEN" });
    expect((await a.request("POST", "/logout", { body: { refresh_token: "nonsense" } })).body).toEqual({
      error: "INVALID_TOKEN",
    });
  });
});

describe("DELETE /sessions", () => {
  it("refuses every token issued before it on both servers, and a login right after works", async () => {
    const bea = await account(a, "bea");
    const second = await login(a, "bea");
    // Both servers know bea, and take both tokens.
    for (const server of [a, b]) {
      for (const token of [bea.token, second.authorization_token]) {
        expect((await server.request("GET", "/timeline/home", { token })).status).toBe(200);
      }
    }
    expect((await a.request("DELETE", "/sessions", { token: bea.token })).status).toBe(204);
    const refused = await a.request("GET", "/timeline/home", { token: second.authorization_token });
    expect([refused.status, refused.body]).toEqual([401, { error: "INVALID_TOKEN" }]);
    // B hears of it from PostgreSQL.
    await until(async () => (await b.request("GET", "/timeline/home", { token: bea.token })).status === 401);
    expect((await b.request("GET", "/timeline/home", { token: second.authorization_token })).body).toEqual({
      error: "INVALID_TOKEN",
    });
    for (const refreshToken of [bea.refreshToken, second.refresh_token]) {
      expect((await b.request("POST", "/refresh", { body: { refresh_token: refreshToken } })).body).toEqual({
        error: "INVALID_TOKEN",
      });
    }
    const fresh = await login(a, "bea");
    for (const server of [a, b]) {
      expect((await server.request("GET", "/timeline/home", { token: fresh.authorization_token })).status).toBe(200);
    }
    expect((await a.request("DELETE", "/sessions")).status).toBe(401);
  });

  it("through GraphQL: logout and revokeSessions", async () => {
    const cas = await account(a, "cas");
    const graphql = (query: string, token?: string) =>
      a.request("POST", "/graphql", { body: { query }, ...(token ? { token } : {}) });
    const other = await login(a, "cas");
    const out = await graphql(`mutation { logout(refreshToken: "${other.refresh_token}") { __typename } }`);
    expect(out.body.data.logout.__typename).toBe("MutationLogoutSuccess");
    expect((await a.request("POST", "/refresh", { body: { refresh_token: other.refresh_token } })).body).toEqual({
      error: "INVALID_TOKEN",
    });
    const bad = await graphql('mutation { logout(refreshToken: "nonsense") { ... on DomainError { code } } }');
    expect(bad.body.data.logout).toEqual({ code: "INVALID_TOKEN" });
    const again = await graphql(
      `mutation { logout(refreshToken: "${other.refresh_token}") { ... on DomainError { code } } }`,
    );
    expect(again.body.data.logout).toEqual({ code: "INVALID_TOKEN" });
    // Another session of cas, known to both servers before the revocation.
    const third = await login(a, "cas");
    for (const server of [a, b]) {
      for (const token of [cas.token, third.authorization_token]) {
        expect((await server.request("GET", "/timeline/home", { token })).status).toBe(200);
      }
    }
    const revoked = await graphql(
      "mutation { revokeSessions { ... on MutationRevokeSessionsSuccess { data } } }",
      third.authorization_token,
    );
    expect(revoked.body.data.revokeSessions).toEqual({ data: true });
    // Every token issued before it: 401 INVALID_TOKEN, through REST and GraphQL, on both servers.
    for (const token of [cas.token, third.authorization_token]) {
      const refused = await a.request("GET", "/timeline/home", { token });
      expect([refused.status, refused.body]).toEqual([401, { error: "INVALID_TOKEN" }]);
      const viaGraphql = await graphql("{ viewer { __typename } }", token);
      expect([viaGraphql.status, viaGraphql.body.errors[0].extensions.code]).toEqual([401, "INVALID_TOKEN"]);
      await until(async () => (await b.request("GET", "/timeline/home", { token })).status === 401);
      expect((await b.request("GET", "/timeline/home", { token })).body).toEqual({ error: "INVALID_TOKEN" });
    }
    for (const refreshToken of [cas.refreshToken, third.refresh_token]) {
      const refreshed = await graphql(
        `mutation { refresh(refreshToken: "${refreshToken}") { ... on DomainError { code } } }`,
      );
      expect(refreshed.body.data.refresh).toEqual({ code: "INVALID_TOKEN" });
    }
    const anonymous = await graphql("mutation { revokeSessions { __typename } }");
    expect([anonymous.status, anonymous.body.errors[0].extensions.code]).toEqual([401, "UNAUTHORIZED"]);
    // A login after it works.
    const fresh = await login(a, "cas");
    const viewer = await graphql("{ viewer { ... on QueryViewerSuccess { data { id } } } }", fresh.authorization_token);
    expect(viewer.body.data.viewer.data.id).toBe(cas.id);
  });
});
