// GraphQL at /graphql (docs/http.md#graphql): the account and session operations give the same
// results and the same error codes as their REST routes, and the endpoint itself never leaks a
// failure.
import { createHash } from "node:crypto";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { account, mailedToken, PASSPHRASE, register, type TestAccount } from "./support/fixtures.ts";
import { type Answer, startTestServer, type TestServer } from "./support/server.ts";

const SERVICE_EPOCH_MS = Date.UTC(2022, 0, 1);

let server: TestServer;
let moderator: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  moderator = await account(server, "gql_mod", "moderator");
});
afterAll(() => server.close());

interface Credentials {
  token?: string;
  authorization?: string;
}

/** POSTs a GraphQL operation; a well-formed operation answers 200 without top-level errors. */
async function gql(query: string, variables: Record<string, unknown> = {}, credentials: Credentials = {}) {
  const answer = await server.request("POST", "/graphql", {
    body: { query, variables },
    token: credentials.token,
    headers: credentials.authorization ? { authorization: credentials.authorization } : {},
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.errors).toBeUndefined();
  return answer.body.data;
}

/** POSTs a GraphQL operation whose credentials fail: the whole answer, not its data. */
function gqlAnswer(query: string, variables: Record<string, unknown> = {}, credentials: Credentials = {}) {
  return server.request("POST", "/graphql", {
    body: { query, variables },
    token: credentials.token,
    headers: credentials.authorization ? { authorization: credentials.authorization } : {},
  });
}

/** Credentials fail in GraphQL as in REST: HTTP 401 with WWW-Authenticate and the same code. */
function expectCredentialFailure(rest: Answer, graphql: Answer, code: string): void {
  expect({ status: rest.status, body: rest.body }).toEqual({ status: 401, body: { error: code } });
  expect(graphql.status).toBe(401);
  expect(graphql.headers["www-authenticate"]).toBe("Bearer");
  expect(graphql.body.errors[0].extensions.code).toBe(code);
}

/** A REST error answer and a GraphQL DomainError result that carry the same code. */
function expectAgree(rest: Answer, graphql: unknown, status: number, code: string): void {
  expect({ status: rest.status, body: rest.body }).toEqual({ status, body: { error: code } });
  expect(graphql).toEqual({ __typename: "DomainError", code });
}

const CREATE_ACCOUNT = `
  mutation ($input: CreateAccountInput!) {
    createAccount(input: $input) {
      __typename
      ... on MutationCreateAccountSuccess { data { id name email } }
      ... on DomainError { code }
    }
  }`;

const VERIFY_EMAIL = `
  mutation ($name: String!, $token: String!) {
    verifyEmail(name: $name, token: $token) {
      __typename
      ... on MutationVerifyEmailSuccess { data }
      ... on DomainError { code }
    }
  }`;

const RESEND_VERIFY_EMAIL = `
  mutation ($name: String!, $captchaToken: String!) {
    resendVerifyEmail(name: $name, captchaToken: $captchaToken) {
      __typename
      ... on MutationResendVerifyEmailSuccess { data }
      ... on DomainError { code }
    }
  }`;

const LOGIN = `
  mutation ($name: String!, $passphrase: String!, $captchaToken: String!) {
    login(name: $name, passphrase: $passphrase, captchaToken: $captchaToken) {
      __typename
      ... on MutationLoginSuccess { data { authorizationToken refreshToken expiresIn } }
      ... on DomainError { code }
    }
  }`;

const REFRESH = `
  mutation ($refreshToken: String!) {
    refresh(refreshToken: $refreshToken) {
      __typename
      ... on MutationRefreshSuccess { data { authorizationToken } }
      ... on DomainError { code }
    }
  }`;

const ACCOUNT_FIELDS = "id name nickname bio avatar header followedCount followingCount noteCount email";

const ACCOUNT = `
  query ($name: String!) {
    account(name: $name) {
      __typename
      ... on QueryAccountSuccess { data { ${ACCOUNT_FIELDS} } }
      ... on DomainError { code }
    }
  }`;

const VIEWER = `
  query {
    viewer {
      __typename
      ... on QueryViewerSuccess { data { ${ACCOUNT_FIELDS} } }
      ... on DomainError { code }
    }
  }`;

const UPDATE_ACCOUNT = `
  mutation ($name: String!, $ifMatch: String, $input: UpdateAccountInput!) {
    updateAccount(name: $name, ifMatch: $ifMatch, input: $input) {
      __typename
      ... on MutationUpdateAccountSuccess { data { etag emailChangePending account { name nickname bio email } } }
      ... on DomainError { code }
    }
  }`;

type ModerationField = "freezeAccount" | "unfreezeAccount" | "silenceAccount" | "unsilenceAccount";

function moderationMutation(field: ModerationField): string {
  const success = `Mutation${field[0].toUpperCase()}${field.slice(1)}Success`;
  return `
    mutation ($name: String!) {
      ${field}(name: $name) {
        __typename
        ... on ${success} { data }
        ... on DomainError { code }
      }
    }`;
}

const MODERATION_REST: Record<ModerationField, [string, string]> = {
  freezeAccount: ["PUT", "freeze"],
  unfreezeAccount: ["DELETE", "freeze"],
  silenceAccount: ["PUT", "silence"],
  unsilenceAccount: ["DELETE", "silence"],
};

function createInput(name: string, captchaToken = "ok") {
  return { name, email: `${name}@example.com`, passphrase: PASSPHRASE, captchaToken };
}

function restCreate(name: string, captchaToken = "ok") {
  const { captchaToken: captcha_token, ...rest } = createInput(name, captchaToken);
  return server.request("POST", "/accounts", { body: { ...rest, captcha_token } });
}

function loginVariables(name: string, passphrase = PASSPHRASE, captchaToken = "ok") {
  return { name, passphrase, captchaToken };
}

function restLogin(name: string, passphrase = PASSPHRASE, captchaToken = "ok") {
  return server.request("POST", "/login", { body: { name, passphrase, captcha_token: captchaToken } });
}

function etagOf(nickname: string, email: string): string {
  return createHash("md5").update(`${nickname}:${email}`).digest("hex");
}

describe("createAccount", () => {
  it("creates an account with the same shape as POST /accounts", async () => {
    const data = await gql(CREATE_ACCOUNT, { input: createInput("gqlc_anna") });
    expect(data.createAccount.__typename).toBe("MutationCreateAccountSuccess");
    const created = data.createAccount.data;
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9]+$/),
      name: "@gqlc_anna@murmur.test",
      email: "gqlc_anna@example.com",
    });

    const rest = await restCreate("gqlc_anne");
    expect(rest.status).toBe(200);
    expect(Object.keys(rest.body).sort()).toEqual(Object.keys(created).sort());
    expect(rest.body.name).toBe("@gqlc_anne@murmur.test");
  });

  it("rejects a disallowed name with INVALID_ACCOUNT_NAME, like REST", async () => {
    for (const name of ["-gqlc", "gqlc bad", "gqlc_"]) {
      const data = await gql(CREATE_ACCOUNT, { input: createInput(name) });
      expectAgree(await restCreate(name), data.createAccount, 400, "INVALID_ACCOUNT_NAME");
    }
  });

  it("rejects a name in use (any case) with ACCOUNT_NAME_IN_USE, like REST", async () => {
    await register(server, "gqlc_bert");
    const data = await gql(CREATE_ACCOUNT, { input: { ...createInput("GQLC_BERT"), email: "bert2@example.com" } });
    const rest = await server.request("POST", "/accounts", {
      body: { name: "gqlc_Bert", email: "bert3@example.com", passphrase: PASSPHRASE, captcha_token: "ok" },
    });
    expectAgree(rest, data.createAccount, 409, "ACCOUNT_NAME_IN_USE");
  });

  it("rejects a failed captcha with YOU_ARE_BOT, like REST", async () => {
    const data = await gql(CREATE_ACCOUNT, { input: createInput("gqlc_cora", "fail") });
    expectAgree(await restCreate("gqlc_cora", "fail"), data.createAccount, 400, "YOU_ARE_BOT");
  });
});

describe("verifyEmail and resendVerifyEmail", () => {
  it("verifies with the mailed token, after which login works", async () => {
    await register(server, "gqlv_dora");
    expect((await gql(LOGIN, loginVariables("gqlv_dora"))).login).toEqual({
      __typename: "DomainError",
      code: "EMAIL_NOT_VERIFIED",
    });
    const token = await mailedToken(server, "gqlv_dora@example.com");
    const data = await gql(VERIFY_EMAIL, { name: "gqlv_dora", token });
    expect(data.verifyEmail).toEqual({ __typename: "MutationVerifyEmailSuccess", data: true });
    expect((await gql(LOGIN, loginVariables("gqlv_dora"))).login.__typename).toBe("MutationLoginSuccess");
  });

  it("rejects a wrong token, or a token used twice, with INVALID_TOKEN, like REST", async () => {
    await register(server, "gqlv_emil");
    const data = await gql(VERIFY_EMAIL, { name: "gqlv_emil", token: "not-the-token" });
    const rest = await server.request("POST", "/accounts/gqlv_emil/verify_email", { body: { token: "not-the-token" } });
    expectAgree(rest, data.verifyEmail, 400, "INVALID_TOKEN");

    const token = await mailedToken(server, "gqlv_emil@example.com");
    expect((await gql(VERIFY_EMAIL, { name: "gqlv_emil", token })).verifyEmail.data).toBe(true);
    const again = await gql(VERIFY_EMAIL, { name: "gqlv_emil", token });
    const restAgain = await server.request("POST", "/accounts/gqlv_emil/verify_email", { body: { token } });
    expectAgree(restAgain, again.verifyEmail, 400, "INVALID_TOKEN");
  });

  it("resends a new token that replaces the earlier one", async () => {
    await register(server, "gqlv_finn");
    const first = await mailedToken(server, "gqlv_finn@example.com");
    const data = await gql(RESEND_VERIFY_EMAIL, { name: "gqlv_finn", captchaToken: "ok" });
    expect(data.resendVerifyEmail).toEqual({ __typename: "MutationResendVerifyEmailSuccess", data: true });
    const second = await mailedToken(server, "gqlv_finn@example.com");
    expect(second).not.toBe(first);
    expect((await gql(VERIFY_EMAIL, { name: "gqlv_finn", token: first })).verifyEmail.code).toBe("INVALID_TOKEN");
    expect((await gql(VERIFY_EMAIL, { name: "gqlv_finn", token: second })).verifyEmail.data).toBe(true);
  });

  it("rejects a resend for a verified account with ACCOUNT_ALREADY_VERIFIED, like REST", async () => {
    await account(server, "gqlv_gina");
    const data = await gql(RESEND_VERIFY_EMAIL, { name: "gqlv_gina", captchaToken: "ok" });
    const rest = await server.request("POST", "/accounts/gqlv_gina/resend_verify_email", {
      body: { captcha_token: "ok" },
    });
    expectAgree(rest, data.resendVerifyEmail, 400, "ACCOUNT_ALREADY_VERIFIED");
  });

  it("rejects an unknown account with ACCOUNT_NOT_FOUND, like REST", async () => {
    const data = await gql(VERIFY_EMAIL, { name: "gqlv_nobody", token: "x" });
    const rest = await server.request("POST", "/accounts/gqlv_nobody/verify_email", { body: { token: "x" } });
    expectAgree(rest, data.verifyEmail, 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("login and refresh", () => {
  it("logs in with the same tokens as POST /login", async () => {
    const hugo = await account(server, "gqll_hugo");
    const data = await gql(LOGIN, loginVariables("@gqll_hugo@murmur.test"));
    expect(data.login.__typename).toBe("MutationLoginSuccess");
    const { authorizationToken, refreshToken, expiresIn } = data.login.data;
    expect(decodeProtectedHeader(authorizationToken).alg).toBe("EdDSA");
    const access = decodeJwt(authorizationToken);
    const refresh = decodeJwt(refreshToken);
    expect(access).toMatchObject({ sub: hugo.id, typ: "access" });
    expect(refresh).toMatchObject({ sub: hugo.id, typ: "refresh" });
    expect(access.exp! - access.iat!).toBe(900);
    expect(refresh.exp! - refresh.iat!).toBe(2_592_000);
    expect(expiresIn).toBe(Math.floor((access.exp! * 1000 - SERVICE_EPOCH_MS) / 1000));

    const viewer = await gql(VIEWER, {}, { token: authorizationToken });
    expect(viewer.viewer.data.name).toBe("@gqll_hugo@murmur.test");
  });

  it("rejects a wrong passphrase or unknown name with FAILED_TO_LOGIN, like REST", async () => {
    await account(server, "gqll_ida");
    for (const [name, passphrase] of [
      ["gqll_ida", "wrong-passphrase"],
      ["gqll_nobody", PASSPHRASE],
    ]) {
      const data = await gql(LOGIN, loginVariables(name, passphrase));
      expectAgree(await restLogin(name, passphrase), data.login, 400, "FAILED_TO_LOGIN");
    }
  });

  it("rejects an unverified account with EMAIL_NOT_VERIFIED, like REST", async () => {
    await register(server, "gqll_jan");
    const data = await gql(LOGIN, loginVariables("gqll_jan"));
    expectAgree(await restLogin("gqll_jan"), data.login, 403, "EMAIL_NOT_VERIFIED");
  });

  it("rejects a failed captcha with YOU_ARE_BOT, like REST", async () => {
    await account(server, "gqll_kai");
    const data = await gql(LOGIN, loginVariables("gqll_kai", PASSPHRASE, "fail"));
    expectAgree(await restLogin("gqll_kai", PASSPHRASE, "fail"), data.login, 400, "YOU_ARE_BOT");
  });

  it("refreshes to a working authorization token", async () => {
    const lena = await account(server, "gqll_lena");
    const data = await gql(REFRESH, { refreshToken: lena.refreshToken });
    expect(data.refresh.__typename).toBe("MutationRefreshSuccess");
    expect(Object.keys(data.refresh.data)).toEqual(["authorizationToken"]);
    const token = data.refresh.data.authorizationToken;
    expect(decodeJwt(token)).toMatchObject({ sub: lena.id, typ: "access" });
    expect((await gql(VIEWER, {}, { token })).viewer.data.name).toBe("@gqll_lena@murmur.test");
  });

  it("rejects an invalid refresh token with INVALID_TOKEN and an expired one with EXPIRED_TOKEN, like REST", async () => {
    const max = await account(server, "gqll_max");
    for (const refreshToken of ["garbage", max.token]) {
      const data = await gql(REFRESH, { refreshToken });
      const rest = await server.request("POST", "/refresh", { body: { refresh_token: refreshToken } });
      expectAgree(rest, data.refresh, 400, "INVALID_TOKEN");
    }
    const expired = await server.services.tokens.sign(BigInt(max.id), "refresh", new Date(Date.now() - 2_592_001_000));
    const data = await gql(REFRESH, { refreshToken: expired.token });
    const rest = await server.request("POST", "/refresh", { body: { refresh_token: expired.token } });
    expectAgree(rest, data.refresh, 400, "EXPIRED_TOKEN");
  });

  it("rejects a frozen account with YOU_ARE_FROZEN on login and refresh, like REST", async () => {
    const nora = await account(server, "gqll_nora");
    expect((await gql(moderationMutation("freezeAccount"), { name: "gqll_nora" }, moderator)).freezeAccount.data).toBe(
      true,
    );
    expectAgree(
      await restLogin("gqll_nora"),
      (await gql(LOGIN, loginVariables("gqll_nora"))).login,
      403,
      "YOU_ARE_FROZEN",
    );
    const rest = await server.request("POST", "/refresh", { body: { refresh_token: nora.refreshToken } });
    const data = await gql(REFRESH, { refreshToken: nora.refreshToken });
    expectAgree(rest, data.refresh, 403, "YOU_ARE_FROZEN");
  });
});

describe("account and viewer", () => {
  let owen: TestAccount;
  let pia: TestAccount;
  beforeAll(async () => {
    owen = await account(server, "gqla_owen");
    pia = await account(server, "gqla_pia");
  });

  it("shows the public view with the same values as GET /accounts/{name}", async () => {
    const data = await gql(ACCOUNT, { name: "gqla_owen" });
    expect(data.account.__typename).toBe("QueryAccountSuccess");
    const rest = await server.request("GET", "/accounts/gqla_owen");
    expect(rest.status).toBe(200);
    expect(data.account.data).toEqual({
      id: rest.body.id,
      name: "@gqla_owen@murmur.test",
      nickname: rest.body.nickname,
      bio: rest.body.bio,
      avatar: rest.body.avatar,
      header: rest.body.header,
      followedCount: rest.body.followed_count,
      followingCount: rest.body.following_count,
      noteCount: rest.body.note_count,
      email: null,
    });
    expect(data.account.data).toMatchObject({ id: owen.id, nickname: "gqla_owen", bio: "", noteCount: 0 });
  });

  it("finds the account by qualified name and by id", async () => {
    for (const name of ["@gqla_owen@murmur.test", "GQLA_OWEN", owen.id]) {
      expect((await gql(ACCOUNT, { name })).account.data.id, name).toBe(owen.id);
    }
  });

  it("shows the e-mail to the owner only", async () => {
    expect((await gql(ACCOUNT, { name: "gqla_owen" }, { token: owen.token })).account.data.email).toBe(owen.email);
    expect((await gql(ACCOUNT, { name: "gqla_owen" }, { token: pia.token })).account.data.email).toBeNull();
    expect((await gql(ACCOUNT, { name: "gqla_owen" })).account.data.email).toBeNull();
  });

  it("rejects an unknown account with ACCOUNT_NOT_FOUND, like REST", async () => {
    const data = await gql(ACCOUNT, { name: "gqla_nobody" });
    expectAgree(await server.request("GET", "/accounts/gqla_nobody"), data.account, 404, "ACCOUNT_NOT_FOUND");
  });

  it("rejects an unusable credential on the public account query with HTTP 401 INVALID_TOKEN, like REST", async () => {
    const answer = await gqlAnswer(ACCOUNT, { name: "gqla_owen" }, { authorization: "Bearer abc" });
    const rest = await server.request("GET", "/accounts/gqla_owen", { headers: { authorization: "Bearer abc" } });
    expectCredentialFailure(rest, answer, "INVALID_TOKEN");
  });

  it("viewer is the calling account, with its e-mail", async () => {
    const data = await gql(VIEWER, {}, { token: pia.token });
    expect(data.viewer.__typename).toBe("QueryViewerSuccess");
    expect(data.viewer.data).toMatchObject({ id: pia.id, name: "@gqla_pia@murmur.test", email: pia.email });
  });

  it("viewer without credentials is HTTP 401 UNAUTHORIZED, like a REST route that requires them", async () => {
    const rest = await server.request("PATCH", "/accounts/gqla_pia", { body: { bio: "x" } });
    expectCredentialFailure(rest, await gqlAnswer(VIEWER), "UNAUTHORIZED");
  });

  it("viewer with an unusable credential is HTTP 401 INVALID_TOKEN, like REST", async () => {
    for (const authorization of ["Bearer abc", `Bearer ${pia.refreshToken}`, "Basic abc"]) {
      const answer = await gqlAnswer(VIEWER, {}, { authorization });
      const rest = await server.request("PATCH", "/accounts/gqla_pia", {
        body: { bio: "x" },
        headers: { authorization },
      });
      expectCredentialFailure(rest, answer, "INVALID_TOKEN");
    }
  });

  it("viewer with an expired token is HTTP 401 EXPIRED_TOKEN, like REST", async () => {
    const expired = await server.services.tokens.sign(BigInt(pia.id), "access", new Date(Date.now() - 901_000));
    const answer = await gqlAnswer(VIEWER, {}, { token: expired.token });
    const rest = await server.request("PATCH", "/accounts/gqla_pia", { body: { bio: "x" }, token: expired.token });
    expectCredentialFailure(rest, answer, "EXPIRED_TOKEN");
  });
});

describe("updateAccount", () => {
  it("updates and returns the ETag of the new state, the same one REST shows", async () => {
    const quin = await account(server, "gqlu_quin");
    const data = await gql(
      UPDATE_ACCOUNT,
      { name: "gqlu_quin", input: { nickname: "Quin", bio: "hello" } },
      { token: quin.token },
    );
    expect(data.updateAccount.__typename).toBe("MutationUpdateAccountSuccess");
    expect(data.updateAccount.data).toEqual({
      etag: etagOf("Quin", quin.email),
      emailChangePending: false,
      account: { name: "@gqlu_quin@murmur.test", nickname: "Quin", bio: "hello", email: quin.email },
    });
    const rest = await server.request("GET", "/accounts/gqlu_quin", { token: quin.token });
    expect(rest.headers.etag).toBe(`"${data.updateAccount.data.etag}"`);

    const guarded = await gql(
      UPDATE_ACCOUNT,
      { name: "gqlu_quin", ifMatch: data.updateAccount.data.etag, input: { bio: "again" } },
      { token: quin.token },
    );
    expect(guarded.updateAccount.data.account.bio).toBe("again");
  });

  it("reports a pending e-mail change, like REST's 202, and keeps the old address until confirmed", async () => {
    const rita = await account(server, "gqlu_rita");
    const data = await gql(
      UPDATE_ACCOUNT,
      { name: "gqlu_rita", input: { email: "rita-new@example.com" } },
      { token: rita.token },
    );
    expect(data.updateAccount.data.emailChangePending).toBe(true);
    expect(data.updateAccount.data.account.email).toBe(rita.email);

    const sam = await account(server, "gqlu_sam");
    const rest = await server.request("PATCH", "/accounts/gqlu_sam", {
      body: { email: "sam-new@example.com" },
      token: sam.token,
    });
    expect(rest.status).toBe(202);
    expect(rest.body.email).toBe(sam.email);
  });

  it("rejects a stale ifMatch with INVALID_ETAG, like REST's If-Match", async () => {
    const tess = await account(server, "gqlu_tess");
    const stale = etagOf("someone else", tess.email);
    const data = await gql(
      UPDATE_ACCOUNT,
      { name: "gqlu_tess", ifMatch: stale, input: { bio: "x" } },
      { token: tess.token },
    );
    const rest = await server.request("PATCH", "/accounts/gqlu_tess", {
      body: { bio: "x" },
      token: tess.token,
      headers: { "if-match": `"${stale}"` },
    });
    expectAgree(rest, data.updateAccount, 412, "INVALID_ETAG");
  });

  it("rejects another account's update with NO_PERMISSION, like REST", async () => {
    await account(server, "gqlu_uma");
    const vic = await account(server, "gqlu_vic");
    const data = await gql(UPDATE_ACCOUNT, { name: "gqlu_uma", input: { bio: "x" } }, { token: vic.token });
    const rest = await server.request("PATCH", "/accounts/gqlu_uma", { body: { bio: "x" }, token: vic.token });
    expectAgree(rest, data.updateAccount, 403, "NO_PERMISSION");
  });

  it("rejects an update without credentials with HTTP 401 UNAUTHORIZED, like REST", async () => {
    const answer = await gqlAnswer(UPDATE_ACCOUNT, { name: "gqlu_uma", input: { bio: "x" } });
    const rest = await server.request("PATCH", "/accounts/gqlu_uma", { body: { bio: "x" } });
    expectCredentialFailure(rest, answer, "UNAUTHORIZED");
  });
});

describe("freezeAccount, unfreezeAccount, silenceAccount, unsilenceAccount", () => {
  const fields = Object.keys(MODERATION_REST) as ModerationField[];

  it.each(fields)("%s rejects a normal account with NO_PERMISSION, like REST", async (field) => {
    const suffix = field.replace("Account", "").toLowerCase();
    await account(server, `gqlm_target_${suffix}`);
    const caller = await account(server, `gqlm_caller_${suffix}`);
    const data = await gql(moderationMutation(field), { name: `gqlm_target_${suffix}` }, caller);
    const [method, segment] = MODERATION_REST[field];
    const rest = await server.request(method, `/accounts/gqlm_target_${suffix}/${segment}`, {
      body: {},
      token: caller.token,
    });
    expectAgree(rest, data[field], 403, "NO_PERMISSION");
  });

  it("a moderator freezes and unfreezes; a second freeze is ALREADY_FROZEN, like REST", async () => {
    await account(server, "gqlm_wes");
    const freeze = moderationMutation("freezeAccount");
    expect((await gql(freeze, { name: "gqlm_wes" }, moderator)).freezeAccount).toEqual({
      __typename: "MutationFreezeAccountSuccess",
      data: true,
    });
    expect((await gql(LOGIN, loginVariables("gqlm_wes"))).login.code).toBe("YOU_ARE_FROZEN");

    const again = await gql(freeze, { name: "gqlm_wes" }, moderator);
    const rest = await server.request("PUT", "/accounts/gqlm_wes/freeze", { body: {}, token: moderator.token });
    expectAgree(rest, again.freezeAccount, 400, "ALREADY_FROZEN");

    const unfreeze = await gql(moderationMutation("unfreezeAccount"), { name: "gqlm_wes" }, moderator);
    expect(unfreeze.unfreezeAccount).toEqual({ __typename: "MutationUnfreezeAccountSuccess", data: true });
    expect((await gql(LOGIN, loginVariables("gqlm_wes"))).login.__typename).toBe("MutationLoginSuccess");
  });

  it("a moderator silences and unsilences", async () => {
    await account(server, "gqlm_xia");
    const silence = await gql(moderationMutation("silenceAccount"), { name: "gqlm_xia" }, moderator);
    expect(silence.silenceAccount).toEqual({ __typename: "MutationSilenceAccountSuccess", data: true });
    const unsilence = await gql(moderationMutation("unsilenceAccount"), { name: "gqlm_xia" }, moderator);
    expect(unsilence.unsilenceAccount).toEqual({ __typename: "MutationUnsilenceAccountSuccess", data: true });
  });

  it("rejects an unknown target with ACCOUNT_NOT_FOUND, like REST", async () => {
    const data = await gql(moderationMutation("silenceAccount"), { name: "gqlm_nobody" }, moderator);
    const rest = await server.request("PUT", "/accounts/gqlm_nobody/silence", { body: {}, token: moderator.token });
    expectAgree(rest, data.silenceAccount, 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("the /graphql endpoint", () => {
  it("serves GraphiQL to a browser", async () => {
    const answer = await server.request("GET", "/graphql", { headers: { accept: "text/html" } });
    expect(answer.status).toBe(200);
    expect(String(answer.headers["content-type"])).toMatch(/^text\/html/);
    expect(answer.body).toMatch(/graphiql/i);
  });

  it("opens GraphiQL on an example query that runs without credentials, saying where the Authorization header goes", async () => {
    const page = String((await server.request("GET", "/graphql", { headers: { accept: "text/html" } })).body);
    const literal = /"defaultQuery":("(?:[^"\\]|\\.)*")/.exec(page)?.[1];
    expect(literal, "GraphiQL's options carry defaultQuery").toBeDefined();
    const query = JSON.parse(literal ?? '""') as string;
    expect(query).toContain('{"Authorization": "Bearer <authorization_token>"}');
    expect(query).toMatch(/Headers pane/);
    const answer = await server.request("POST", "/graphql", { body: { query, variables: { first: 2 } } });
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.globalTimeline.__typename).toBe("NoteConnection");
  });

  // GraphQL over HTTP: a request error is 400 under application/graphql-response+json; a legacy
  // application/json client gets 200 with the same errors. Neither is ever a 5xx.
  const RESPONSE_JSON = "application/graphql-response+json";

  async function requestError(query: string, accept: string) {
    const answer = await server.request("POST", "/graphql", { body: { query }, headers: { accept } });
    const body = typeof answer.body === "string" ? JSON.parse(answer.body) : answer.body;
    return { status: answer.status, body };
  }

  it("answers a syntactically broken query with a GraphQL error and 400, never 500", async () => {
    const modern = await requestError("{ viewer { ", RESPONSE_JSON);
    expect(modern.status).toBe(400);
    expect(modern.body.data).toBeUndefined();
    expect(modern.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/^Syntax Error/) })]);

    // A request error is 400 for application/json clients too (docs/http.md#graphql-bounds: refused
    // with 400).
    const legacy = await requestError("{ viewer { ", "application/json");
    expect(legacy.status).toBe(400);
    expect(legacy.body).toEqual(modern.body);
  });

  it("answers an unknown field with a GraphQL error and 400, never 500", async () => {
    const modern = await requestError("{ nothingHere }", RESPONSE_JSON);
    expect(modern.status).toBe(400);
    expect(modern.body.data).toBeUndefined();
    expect(modern.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/nothingHere/) })]);
    expect((await requestError("{ nothingHere }", "application/json")).status).toBe(400);
  });

  it("masks an unexpected error: no message, cause or stack reaches the client", async () => {
    await account(server, "gqle_yara");
    const spy = vi
      .spyOn(server.services.captcha, "verify")
      .mockRejectedValue(new Error("captcha backend secret hunter2 exploded"));
    try {
      const answer = await server.request("POST", "/graphql", {
        body: { query: LOGIN, variables: loginVariables("gqle_yara") },
      });
      expect(answer.status).toBeLessThan(500);
      expect(answer.body.errors).toHaveLength(1);
      expect(answer.body.errors[0].message).toBe("Unexpected error.");
      const text = JSON.stringify(answer.body);
      expect(text).not.toMatch(/hunter2|stack|originalError|at .*\.ts/);

      const rest = await restLogin("gqle_yara");
      expect({ status: rest.status, body: rest.body }).toEqual({ status: 500, body: { error: "INTERNAL_ERROR" } });
    } finally {
      spy.mockRestore();
    }
  });
});
