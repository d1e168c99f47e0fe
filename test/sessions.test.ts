// Sessions and credentials (docs/accounts.md#sessions, docs/accounts.md#tokens,
// docs/http.md#credentials): login, refresh, the tokens'
// form and lifetimes, and the 401 family of the Authorization header.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { decodeJwt, decodeProtectedHeader, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { TokenIssuer } from "../src/domain/sessions/tokens.ts";
import { createLogger } from "../src/log.ts";
import { buildServer } from "../src/server.ts";
import { closeServices, createServices } from "../src/services.ts";
import * as act from "./support/actions.ts";
import { expectError, expectUnauthorized } from "./support/expect.ts";
import { account, login, PASSPHRASE, register, type TestAccount } from "./support/fixtures.ts";
import { PUBLIC_URL, startTestServer, type TestServer } from "./support/server.ts";

const SERVICE_EPOCH_MS = Date.UTC(2022, 0, 1);
const ACCESS_LIFETIME = 900;
const REFRESH_LIFETIME = 2_592_000;

let server: TestServer;
let moderator: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  moderator = await account(server, "sess_mod", "moderator");
});
afterAll(() => server.close());

function loginRequest(body: unknown) {
  return server.request("POST", "/login", { body });
}

function patchBio(name: string, options: { token?: string; headers?: Record<string, string> }, target = server) {
  return target.request("PATCH", `/accounts/${name}`, { body: { bio: "x" }, ...options });
}

const freeze = (name: string) => act.moderate(server, moderator, name, "freeze");

/** The token with one character of its signature changed. */
function forge(token: string): string {
  const [header, payload, signature] = token.split(".");
  // A character in the middle: the last one may only carry padding bits.
  const i = 10;
  const swapped = signature[i] === "A" ? "B" : "A";
  return `${header}.${payload}.${signature.slice(0, i)}${swapped}${signature.slice(i + 1)}`;
}

describe("POST /login", () => {
  it("answers exactly the two EdDSA tokens and expires_in in seconds since the service epoch", async () => {
    const alice = await account(server, "login_alice");
    const before = Math.floor(Date.now() / 1000);
    const answer = await loginRequest({ name: "login_alice", passphrase: PASSPHRASE, captcha_token: "ok" });
    const after = Math.ceil(Date.now() / 1000);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(["authorization_token", "expires_in", "refresh_token"]);
    const { authorization_token, refresh_token, expires_in } = answer.body;
    expect(typeof authorization_token).toBe("string");
    expect(typeof refresh_token).toBe("string");

    expect(decodeProtectedHeader(authorization_token).alg).toBe("EdDSA");
    expect(decodeProtectedHeader(refresh_token).alg).toBe("EdDSA");
    const access = decodeJwt(authorization_token);
    const refresh = decodeJwt(refresh_token);
    for (const claims of [access, refresh]) {
      expect(claims.sub).toBe(alice.id);
      expect(typeof claims.jti).toBe("string");
      expect(claims.jti).not.toBe("");
      expect(claims.iat).toBeGreaterThanOrEqual(before);
      expect(claims.iat).toBeLessThanOrEqual(after);
    }
    expect(access.typ).toBe("access");
    expect(refresh.typ).toBe("refresh");
    expect(access.jti).not.toBe(refresh.jti);
    expect(access.exp! - access.iat!).toBe(ACCESS_LIFETIME);
    expect(refresh.exp! - refresh.iat!).toBe(REFRESH_LIFETIME);

    expect(Number.isInteger(expires_in)).toBe(true);
    expect(expires_in).toBe(Math.floor((access.exp! * 1000 - SERVICE_EPOCH_MS) / 1000));
  });

  it("accepts the qualified name and any letter case", async () => {
    const bob = await account(server, "login_Bob");
    for (const name of ["@login_Bob@murmur.test", "LOGIN_BOB", "login_bob", "@LOGIN_bob@MURMUR.TEST"]) {
      const answer = await loginRequest({ name, passphrase: PASSPHRASE, captcha_token: "ok" });
      expect(answer.status, name).toBe(200);
      expect(decodeJwt(answer.body.authorization_token).sub, name).toBe(bob.id);
    }
  });

  it("rejects a wrong passphrase or an unknown name with 400 FAILED_TO_LOGIN", async () => {
    await account(server, "login_carol");
    const cases = [
      { name: "login_carol", passphrase: `${PASSPHRASE}-wrong` },
      { name: "login_nobody", passphrase: PASSPHRASE },
      { name: "@login_carol@elsewhere.example", passphrase: PASSPHRASE },
    ];
    for (const body of cases) {
      expectError(await loginRequest({ ...body, captcha_token: "ok" }), 400, "FAILED_TO_LOGIN");
    }
  });

  it("rejects a failed captcha with 400 YOU_ARE_BOT", async () => {
    await account(server, "login_dave");
    const answer = await loginRequest({ name: "login_dave", passphrase: PASSPHRASE, captcha_token: "fail" });
    expectError(answer, 400, "YOU_ARE_BOT");
  });

  it("rejects missing members, wrong types and malformed JSON with 400 INVALID_REQUEST", async () => {
    await account(server, "login_erin");
    const good = { name: "login_erin", passphrase: PASSPHRASE, captcha_token: "ok" };
    const bodies: unknown[] = [
      {},
      { passphrase: PASSPHRASE, captcha_token: "ok" },
      { name: "login_erin", captcha_token: "ok" },
      { name: "login_erin", passphrase: PASSPHRASE },
      { ...good, name: 42 },
      { ...good, passphrase: null },
      { ...good, captcha_token: true },
      [good],
    ];
    for (const body of bodies) {
      expectError(await loginRequest(body), 400, "INVALID_REQUEST");
    }
    const malformed = await server.request("POST", "/login", {
      payload: '{"name": "login_erin", "passphrase":',
      headers: { "content-type": "application/json" },
    });
    expectError(malformed, 400, "INVALID_REQUEST");
  });

  it("rejects an account whose e-mail is not verified with 403 EMAIL_NOT_VERIFIED", async () => {
    await register(server, "login_frank");
    const answer = await loginRequest({ name: "login_frank", passphrase: PASSPHRASE, captcha_token: "ok" });
    expectError(answer, 403, "EMAIL_NOT_VERIFIED");
  });

  it("rejects a frozen account with 403 YOU_ARE_FROZEN", async () => {
    await account(server, "login_grace");
    await freeze("login_grace");
    const answer = await loginRequest({ name: "login_grace", passphrase: PASSPHRASE, captcha_token: "ok" });
    expectError(answer, 403, "YOU_ARE_FROZEN");
  });

  it("rejects a passphrase over 512 code points with 400 INVALID_REQUEST", async () => {
    await account(server, "login_heidi");
    const body = (passphrase: string) => ({ name: "login_heidi", passphrase, captcha_token: "ok" });
    // 513 code points (1026 UTF-16 units): too long.
    expectError(await loginRequest(body("😀".repeat(513))), 400, "INVALID_REQUEST");
    // 512 code points (1024 UTF-16 units) is within the limit: only the passphrase is wrong.
    expectError(await loginRequest(body("😀".repeat(512))), 400, "FAILED_TO_LOGIN");
  });
});

describe("POST /refresh", () => {
  it("answers exactly a new authorization token that works, and the refresh token stays", async () => {
    const ivan = await account(server, "refresh_ivan");
    for (let round = 0; round < 2; round++) {
      const answer = await server.request("POST", "/refresh", { body: { refresh_token: ivan.refreshToken } });
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body)).toEqual(["authorization_token"]);
      const token = answer.body.authorization_token;
      expect(decodeProtectedHeader(token).alg).toBe("EdDSA");
      const claims = decodeJwt(token);
      expect(claims).toMatchObject({ sub: ivan.id, typ: "access" });
      expect(claims.exp! - claims.iat!).toBe(ACCESS_LIFETIME);
      const patched = await patchBio("refresh_ivan", { token });
      expect(patched.status).toBe(200);
      expect(patched.body.bio).toBe("x");
    }
  });

  it("rejects garbage with 400 INVALID_TOKEN and a missing member with 400 INVALID_REQUEST", async () => {
    for (const refresh_token of ["garbage", "", "a.b.c"]) {
      expectError(await server.request("POST", "/refresh", { body: { refresh_token } }), 400, "INVALID_TOKEN");
    }
    expectError(await server.request("POST", "/refresh", { body: {} }), 400, "INVALID_REQUEST");
  });

  it("rejects an authorization token given as the refresh token with 400 INVALID_TOKEN", async () => {
    const judy = await account(server, "refresh_judy");
    const answer = await server.request("POST", "/refresh", { body: { refresh_token: judy.token } });
    expectError(answer, 400, "INVALID_TOKEN");
  });

  it("rejects an expired refresh token with 400 EXPIRED_TOKEN", async () => {
    const ken = await account(server, "refresh_ken");
    const expired = await server.services.tokens.sign(
      BigInt(ken.id),
      "refresh",
      new Date(Date.now() - (REFRESH_LIFETIME + 1) * 1000),
    );
    const answer = await server.request("POST", "/refresh", { body: { refresh_token: expired.token } });
    expectError(answer, 400, "EXPIRED_TOKEN");
  });

  it("rejects a frozen account's refresh token with 403 YOU_ARE_FROZEN", async () => {
    const leo = await account(server, "refresh_leo");
    await freeze("refresh_leo");
    const answer = await server.request("POST", "/refresh", { body: { refresh_token: leo.refreshToken } });
    expectError(answer, 403, "YOU_ARE_FROZEN");
  });

  it("rejects a well-signed refresh token whose session was never stored with 400 INVALID_TOKEN", async () => {
    const mia = await account(server, "refresh_mia");
    const unstored = await server.services.tokens.sign(BigInt(mia.id), "refresh");
    const answer = await server.request("POST", "/refresh", { body: { refresh_token: unstored.token } });
    expectError(answer, 400, "INVALID_TOKEN");
  });

  it("a passphrase change revokes earlier refresh tokens; a later login's refresh token works", async () => {
    const nina = await account(server, "refresh_nina");
    const second = await login(server, "refresh_nina");
    const newPassphrase = "another-staple-battery";
    const changed = await server.request("PATCH", "/accounts/refresh_nina", {
      body: { passphrase: newPassphrase },
      token: nina.token,
    });
    expect(changed.status).toBe(200);

    for (const refresh_token of [nina.refreshToken, second.refresh_token]) {
      expectError(await server.request("POST", "/refresh", { body: { refresh_token } }), 400, "INVALID_TOKEN");
    }
    const oldLogin = await loginRequest({ name: "refresh_nina", passphrase: PASSPHRASE, captcha_token: "ok" });
    expectError(oldLogin, 400, "FAILED_TO_LOGIN");

    const fresh = await login(server, "refresh_nina", newPassphrase);
    const refreshed = await server.request("POST", "/refresh", { body: { refresh_token: fresh.refresh_token } });
    expect(refreshed.status).toBe(200);
    expect((await patchBio("refresh_nina", { token: refreshed.body.authorization_token })).status).toBe(200);
  });
});

describe("credentials (Authorization header)", () => {
  let olga: TestAccount;
  let other: TestServer;
  beforeAll(async () => {
    olga = await account(server, "cred_olga");
    // Another instance with its own fresh key: what the server was "before a restart".
    other = await startTestServer();
  });
  afterAll(() => other.close());

  it("accepts a valid authorization token", async () => {
    const answer = await patchBio("cred_olga", { token: olga.token });
    expect(answer.status).toBe(200);
    expect(answer.body.bio).toBe("x");
  });

  it("rejects a missing credential on a route that requires one with 401 UNAUTHORIZED", async () => {
    expectUnauthorized(await patchBio("cred_olga", {}), "UNAUTHORIZED");
  });

  const unusable: [string, () => Promise<string>][] = [
    ["a forged signature", async () => `Bearer ${forge(olga.token)}`],
    ["a malformed token", async () => "Bearer abc"],
    ["another scheme", async () => `Basic ${Buffer.from(`cred_olga:${PASSPHRASE}`).toString("base64")}`],
    ["a refresh token", async () => `Bearer ${olga.refreshToken}`],
    [
      "an HS256 token",
      async () => {
        const token = await new SignJWT({ typ: "access" })
          .setProtectedHeader({ alg: "HS256", typ: "JWT" })
          .setSubject(olga.id)
          .setJti(crypto.randomUUID())
          .setIssuedAt()
          .setExpirationTime("15m")
          .sign(randomBytes(32));
        return `Bearer ${token}`;
      },
    ],
    [
      "an alg:none token",
      async () => {
        const token = new UnsecuredJWT({ typ: "access" })
          .setSubject(olga.id)
          .setJti(crypto.randomUUID())
          .setIssuedAt()
          .setExpirationTime("15m")
          .encode();
        expect(decodeProtectedHeader(token).alg).toBe("none");
        return `Bearer ${token}`;
      },
    ],
    [
      "a token signed by another instance",
      async () => `Bearer ${(await other.services.tokens.sign(BigInt(olga.id), "access")).token}`,
    ],
    ["a token from logging in on another instance", async () => `Bearer ${(await account(other, "cred_olga")).token}`],
  ];

  it.each(unusable)("rejects %s with 401 INVALID_TOKEN", async (_what, header) => {
    const answer = await patchBio("cred_olga", { headers: { authorization: await header() } });
    expectUnauthorized(answer, "INVALID_TOKEN");
  });

  it("rejects an expired authorization token with 401 EXPIRED_TOKEN", async () => {
    const expired = await server.services.tokens.sign(
      BigInt(olga.id),
      "access",
      new Date(Date.now() - (ACCESS_LIFETIME + 1) * 1000),
    );
    expectUnauthorized(await patchBio("cred_olga", { token: expired.token }), "EXPIRED_TOKEN");
  });

  it("rejects an unusable credential on a public route with 401 INVALID_TOKEN", async () => {
    expect((await server.request("GET", "/accounts/cred_olga")).status).toBe(200);
    const answer = await server.request("GET", "/accounts/cred_olga", { headers: { authorization: "Bearer abc" } });
    expectUnauthorized(answer, "INVALID_TOKEN");
  });

  it("rejects a frozen account's valid token on a non-public operation with 403 YOU_ARE_FROZEN", async () => {
    const pat = await account(server, "cred_pat");
    await freeze("cred_pat");
    expectError(await patchBio("cred_pat", { token: pat.token }), 403, "YOU_ARE_FROZEN");
    // Public operations stay open to it.
    expect((await server.request("GET", "/accounts/cred_pat", { token: pat.token })).status).toBe(200);
  });
});

/** A second instance on an existing database, as a restart (or a sibling instance) would be. */
async function instanceOn(databaseUrl: string, env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-data-"));
  const config = loadConfig({ DATA_DIR: dataDir, BCRYPT_COST: "4", PUBLIC_URL, LOG_LEVEL: "silent", ...env });
  const services = await createServices(config, databaseUrl, createLogger("silent"));
  const app: FastifyInstance = await buildServer(services);
  await app.ready();
  return {
    request: (method: "PATCH", url: string, authorization: string) =>
      app.inject({ method, url, headers: { authorization }, payload: { bio: "y" } }),
    async close() {
      await app.close();
      await closeServices(services);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe("TOKEN_SIGNING_KEY", () => {
  const key = randomBytes(32).toString("base64");
  let keyed: TestServer;
  let quinn: TestAccount;
  beforeAll(async () => {
    keyed = await startTestServer({ TOKEN_SIGNING_KEY: key });
    quinn = await account(keyed, "key_quinn");
  });
  afterAll(() => keyed.close());

  it("a token signed under the key verifies with a fresh issuer made from the same key", async () => {
    const claims = await (await TokenIssuer.create(key)).verify(quinn.token, "access", true);
    expect(claims.accountId).toBe(BigInt(quinn.id));
    await expect((await TokenIssuer.create()).verify(quinn.token, "access", true)).rejects.toMatchObject({
      code: "INVALID_TOKEN",
    });
  });

  it("an instance on the same database with the same key accepts the token; one with a fresh key does not", async () => {
    const sameKey = await instanceOn(keyed.databaseUrl, { TOKEN_SIGNING_KEY: key });
    const freshKey = await instanceOn(keyed.databaseUrl, {});
    try {
      const accepted = await sameKey.request("PATCH", "/accounts/key_quinn", `Bearer ${quinn.token}`);
      expect(accepted.statusCode).toBe(200);
      expect(accepted.json().bio).toBe("y");
      const rejected = await freshKey.request("PATCH", "/accounts/key_quinn", `Bearer ${quinn.token}`);
      expect({ status: rejected.statusCode, body: rejected.json() }).toEqual({
        status: 401,
        body: { error: "INVALID_TOKEN" },
      });
    } finally {
      await sameKey.close();
      await freshKey.close();
    }
  });
});
