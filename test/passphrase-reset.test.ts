// A forgotten passphrase (docs/accounts.md#passphrase-reset): POST
// /accounts/{name}/reset_passphrase always answers 204 and mails `Reset token: <token>` only when
// the account exists; POST /accounts/{name}/passphrase sets it once with that token and ends every
// session. Whether the account exists shows in nothing: the same answer, the same SQL statements;
// the mail goes through the queue, after it. Rate limited like registration. GraphQL's
// requestPassphraseReset and resetPassphrase are the same.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countingApp } from "./support/counting.ts";
import { account, login, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let ada: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  ada = await account(server, "ada");
});

afterAll(() => server?.close());

/** Reset mails in the outbox so far (to `to` only, if given), waited for up to `ms` until there are `count`. */
async function resetTokens(count: number, ms = 3_000, to?: string): Promise<string[]> {
  const outbox = path.join(server.dataDir, "outbox");
  const deadline = Date.now() + ms;
  for (;;) {
    const tokens = fs
      .readdirSync(outbox)
      .filter((file) => file.endsWith(".eml"))
      .sort()
      .map((file) => fs.readFileSync(path.join(outbox, file), "utf8").replace(/=\r?\n/g, ""))
      .filter((text) => to === undefined || new RegExp(`^To: .*${to.replace(/[.+]/g, "\\$&")}`, "mi").test(text))
      .map((text) => /^Reset token: (\S+)$/m.exec(text)?.[1])
      .filter((t): t is string => t !== undefined);
    if (tokens.length >= count || Date.now() > deadline) return tokens;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("passphrase reset", () => {
  it("answers 204 alike for an account and for nobody, and mails only the account", async () => {
    const nobody = await server.request("POST", "/accounts/nobody/reset_passphrase", { body: { captcha_token: "ok" } });
    expect([nobody.status, nobody.body]).toEqual([204, ""]);
    expect(await resetTokens(1, 300)).toEqual([]);
    const asked = await server.request("POST", "/accounts/ada/reset_passphrase", { body: { captcha_token: "ok" } });
    expect([asked.status, asked.body]).toEqual([204, ""]);
    expect(await resetTokens(1)).toHaveLength(1);
  });

  it("sets the passphrase once with the mailed token, and every session ends", async () => {
    const [token] = (await resetTokens(1)).slice(-1);
    const weak = await server.request("POST", "/accounts/ada/passphrase", { body: { token, passphrase: "short" } });
    expect([weak.status, weak.body]).toEqual([400, { error: "VULNERABLE_PASSPHRASE" }]);
    const wrong = await server.request("POST", "/accounts/ada/passphrase", {
      body: { token: "not-the-token", passphrase: "a-new-strong-passphrase" },
    });
    expect([wrong.status, wrong.body]).toEqual([400, { error: "INVALID_TOKEN" }]);
    const elsewhere = await server.request("POST", "/accounts/nobody/passphrase", {
      body: { token, passphrase: "a-new-strong-passphrase" },
    });
    expect(elsewhere.body).toEqual({ error: "INVALID_TOKEN" });
    const set = await server.request("POST", "/accounts/ada/passphrase", {
      body: { token, passphrase: "a-new-strong-passphrase" },
    });
    expect(set.status).toBe(204);
    const reused = await server.request("POST", "/accounts/ada/passphrase", {
      body: { token, passphrase: "another-strong-passphrase" },
    });
    expect(reused.body).toEqual({ error: "INVALID_TOKEN" });
    expect((await server.request("GET", "/timeline/home", { token: ada.token })).status).toBe(401);
    expect((await server.request("POST", "/refresh", { body: { refresh_token: ada.refreshToken } })).body).toEqual({
      error: "INVALID_TOKEN",
    });
    const old = await server.request("POST", "/login", {
      body: { name: "ada", passphrase: ada.passphrase, captcha_token: "ok" },
    });
    expect(old.body).toEqual({ error: "FAILED_TO_LOGIN" });
    expect((await login(server, "ada", "a-new-strong-passphrase")).authorization_token).toBeTruthy();
  });
});

describe("a reset token", () => {
  it("lives one hour: an expired one is INVALID_TOKEN, through REST and GraphQL", async () => {
    const eli = await account(server, "eli");
    const asked = await server.request("POST", "/accounts/eli/reset_passphrase", { body: { captcha_token: "ok" } });
    expect(asked.status).toBe(204);
    const [token] = await resetTokens(1, 3_000, eli.email);
    const { db } = server.services;
    const stored = await db.emailToken.findFirstOrThrow({
      where: { accountId: BigInt(eli.id), purpose: "passphrase_reset" },
    });
    const lifetime = stored.expiresAt.getTime() - stored.createdAt.getTime();
    expect(Math.abs(lifetime - 60 * 60_000)).toBeLessThan(5_000);
    await db.emailToken.update({ where: { id: stored.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const rest = await server.request("POST", "/accounts/eli/passphrase", {
      body: { token, passphrase: "a-new-strong-passphrase" },
    });
    expect([rest.status, rest.body]).toEqual([400, { error: "INVALID_TOKEN" }]);
    const graphql = await server.request("POST", "/graphql", {
      body: {
        query: `mutation ($token: String!) { resetPassphrase(name: "eli", token: $token, passphrase: "a-new-strong-passphrase") { ... on DomainError { code } } }`,
        variables: { token },
      },
    });
    expect(graphql.body.data.resetPassphrase).toEqual({ code: "INVALID_TOKEN" });
    expect((await server.request("GET", "/timeline/home", { token: eli.token })).status).toBe(200);
  });
});

describe("nothing tells whether the account exists", () => {
  it("an account and nobody cost the same SQL statements, and only the account's mail is queued", async () => {
    const cy = await account(server, "cy");
    const counting = await countingApp(server);
    try {
      const ask = (segment: string, graphql = false) =>
        counting.count(() =>
          counting.app.inject(
            graphql
              ? {
                  method: "POST",
                  url: "/graphql",
                  payload: {
                    query: `mutation { requestPassphraseReset(name: "${segment}", captchaToken: "ok") { __typename } }`,
                  },
                }
              : { method: "POST", url: `/accounts/${segment}/reset_passphrase`, payload: { captcha_token: "ok" } },
          ),
        );
      // By name, by id, and through GraphQL: each pair sends the same statements, texts and count.
      const pairs: [string, string, boolean][] = [
        ["cy", "nobody", false],
        [cy.id, "123456789012345678", false],
        ["cy", "nobody", true],
      ];
      const before = (await resetTokens(0, 0)).length;
      let mailed = 0;
      for (const [existing, missing, graphql] of pairs) {
        const mine = await ask(existing, graphql);
        const nobody = await ask(missing, graphql);
        expect([mine.status, nobody.status]).toEqual(graphql ? [200, 200] : [204, 204]);
        expect(mine.queries).toBeGreaterThan(1);
        expect(nobody.statements).toEqual(mine.statements);
        // The mail is queued in the request's transaction: cy's only.
        mailed += 1;
        expect(await resetTokens(mailed, 3_000, cy.email)).toHaveLength(mailed);
        await expect.poll(() => server.services.db.mailOutbox.count()).toBe(0);
        expect(await resetTokens(0, 0)).toHaveLength(before + mailed);
      }
    } finally {
      await counting.close();
    }
  });

  it("is limited like registration: the 6th request from one IP in 30 minutes is 429 RATE_LIMITED", async () => {
    const limited = await startTestServer({ RATE_LIMIT_MULTIPLIER: "1" });
    try {
      const ask = (name: string, ip: string) =>
        limited.app.inject({
          method: "POST",
          url: `/accounts/${name}/reset_passphrase`,
          remoteAddress: ip,
          payload: { captcha_token: "ok" },
        });
      for (const name of ["a1", "a2", "a3", "a4", "a5"]) {
        const answer = await ask(name, "10.9.0.1");
        expect([answer.statusCode, answer.headers["x-ratelimit-limit"]]).toEqual([204, "5"]);
      }
      const sixth = await ask("a6", "10.9.0.1");
      expect([sixth.statusCode, sixth.json()]).toEqual([429, { error: "RATE_LIMITED" }]);
      expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(25 * 60);
      expect((await ask("a6", "10.9.0.2")).statusCode).toBe(204);
    } finally {
      await limited.close();
    }
  });
});

describe("GraphQL requestPassphraseReset and resetPassphrase", () => {
  const gql = async (query: string, variables: Record<string, unknown>, token?: string) => {
    const answer = await server.request("POST", "/graphql", { token, body: { query, variables } });
    expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
    return answer.body.data;
  };
  const REQUEST = `mutation ($name: String!, $captcha: String!) {
    requestPassphraseReset(name: $name, captchaToken: $captcha) {
      __typename ... on MutationRequestPassphraseResetSuccess { data } ... on DomainError { code } } }`;
  const RESET = `mutation ($name: String!, $token: String!, $passphrase: String!) {
    resetPassphrase(name: $name, token: $token, passphrase: $passphrase) {
      __typename ... on MutationResetPassphraseSuccess { data } ... on DomainError { code } } }`;

  it("answer as REST does: the same for an account and for nobody, the same codes, once, sessions ended", async () => {
    const dee = await account(server, "dee");
    const second = await login(server, "dee");
    const nobody = await gql(REQUEST, { name: "nobody", captcha: "ok" });
    const asked = await gql(REQUEST, { name: "dee", captcha: "ok" });
    expect(nobody).toEqual({
      requestPassphraseReset: { __typename: "MutationRequestPassphraseResetSuccess", data: true },
    });
    expect(asked).toEqual(nobody);
    expect((await gql(REQUEST, { name: "dee", captcha: "fail" })).requestPassphraseReset).toEqual({
      __typename: "DomainError",
      code: "YOU_ARE_BOT",
    });
    const [token] = await resetTokens(1, 3_000, dee.email);
    expect(token).toBeTruthy();
    const reset = async (name: string, token: string, passphrase: string) =>
      (await gql(RESET, { name, token, passphrase })).resetPassphrase;
    expect(await reset("dee", token, "short")).toEqual({ __typename: "DomainError", code: "VULNERABLE_PASSPHRASE" });
    expect(await reset("dee", "not-the-token", "a-new-strong-passphrase")).toEqual({
      __typename: "DomainError",
      code: "INVALID_TOKEN",
    });
    expect(await reset("nobody", token, "a-new-strong-passphrase")).toEqual({
      __typename: "DomainError",
      code: "INVALID_TOKEN",
    });
    expect(await reset("dee", token, "a-new-strong-passphrase")).toEqual({
      __typename: "MutationResetPassphraseSuccess",
      data: true,
    });
    expect(await reset("dee", token, "another-strong-passphrase")).toEqual({
      __typename: "DomainError",
      code: "INVALID_TOKEN",
    });
    // Every session ended: both tokens are refused, through GraphQL and REST, and both refresh tokens.
    for (const old of [dee.token, second.authorization_token]) {
      const refused = await server.request("POST", "/graphql", {
        token: old,
        body: { query: "{ viewer { __typename } }" },
      });
      expect([refused.status, refused.body.errors[0].extensions.code]).toEqual([401, "INVALID_TOKEN"]);
      expect((await server.request("GET", "/timeline/home", { token: old })).body).toEqual({ error: "INVALID_TOKEN" });
    }
    for (const refreshToken of [dee.refreshToken, second.refresh_token]) {
      expect(
        (
          await gql("mutation ($t: String!) { refresh(refreshToken: $t) { ... on DomainError { code } } }", {
            t: refreshToken,
          })
        ).refresh,
      ).toEqual({ code: "INVALID_TOKEN" });
    }
    expect((await login(server, "dee", "a-new-strong-passphrase")).authorization_token).toBeTruthy();
  });
});
