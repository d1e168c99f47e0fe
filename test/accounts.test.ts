// Accounts over REST (docs/accounts.md): registration, e-mail
// verification, the public view, ETag-guarded updates, freezing and silencing.

import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/expect.ts";
import { account, mailedToken, PASSPHRASE, register, type TestAccount } from "./support/fixtures.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { AccountCreatedShape, expectShape, OwnAccountShape, PublicAccountShape } from "./support/shapes.ts";

const SERVICE_EPOCH_MS = Date.UTC(2022, 0, 1);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const md5 = (text: string) => createHash("md5").update(text, "utf8").digest("hex");
const etagOf = (nickname: string, email: string) => `"${md5(`${nickname}:${email}`)}"`;
const qualified = (name: string) => `@${name}@${HOST}`;

function expectEmpty(answer: Answer, status = 204) {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: "" });
}

function createAccount(fields: Record<string, unknown>) {
  const name = typeof fields.name === "string" ? fields.name : "someone";
  return server.request("POST", "/accounts", {
    body: { name, email: `${name}@example.com`, passphrase: PASSPHRASE, captcha_token: "ok", ...fields },
  });
}

function tryLogin(name: string, passphrase = PASSPHRASE) {
  return server.request("POST", "/login", { body: { name, passphrase, captcha_token: "ok" } });
}

function getAccount(name: string, token?: string) {
  return server.request("GET", `/accounts/${name}`, { token });
}

function patchAccount(name: string, token: string | undefined, body: unknown, headers?: Record<string, string>) {
  return server.request("PATCH", `/accounts/${name}`, { token, body, headers });
}

describe("POST /accounts", () => {
  it("creates an account and answers exactly {id, name, email}, id a snowflake, name qualified", async () => {
    const before = Date.now();
    const answer = await createAccount({ name: "carol.b_1-x", email: "carol.b@example.com" });
    expect(answer.status).toBe(200);
    expectShape(AccountCreatedShape, answer.body);
    expect(answer.body).toEqual({
      id: expect.any(String),
      name: "@carol.b_1-x@murmur.test",
      email: "carol.b@example.com",
    });
    expect(answer.body.id).toMatch(/^[1-9][0-9]{0,19}$/);
    const id = BigInt(answer.body.id);
    expect(id < 1n << 64n).toBe(true);
    const createdAt = Number(id >> 22n) + SERVICE_EPOCH_MS;
    expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it("accepts a one-character name", async () => {
    const answer = await createAccount({ name: "q" });
    expect(answer.status).toBe(200);
    expect(answer.body.name).toBe("@q@murmur.test");
  });

  it.each([
    ["empty", ""],
    ["a space", "bad name"],
    ["a bang", "bad!"],
    ["an at sign", "bad@name"],
    ["a non-ASCII letter", "café"],
    ["a leading dot", ".lead"],
    ["a trailing dot", "trail."],
    ["a leading hyphen", "-lead"],
    ["a trailing hyphen", "trail-"],
    ["a leading underscore", "_lead"],
    ["a trailing underscore", "trail_"],
    ["a lone dot", "."],
  ])("rejects a name with %s: 400 INVALID_ACCOUNT_NAME", async (_, name) => {
    const answer = await createAccount({ name, email: "badname@example.com" });
    expectError(answer, 400, "INVALID_ACCOUNT_NAME");
  });

  it("takes a name of 64 characters and rejects 65 with TOO_LONG_ACCOUNT_NAME", async () => {
    const long64 = `l${"x".repeat(63)}`;
    const ok = await createAccount({ name: long64, email: "long64@example.com" });
    expect(ok.status).toBe(200);
    expect(ok.body.name).toBe(qualified(long64));
    const tooLong = await createAccount({ name: `m${"x".repeat(64)}`, email: "long65@example.com" });
    expectError(tooLong, 400, "TOO_LONG_ACCOUNT_NAME");
  });

  it.each([
    ["no at sign", "no-at.example.com"],
    ["no domain", "someone@"],
    ["no local part", "@example.com"],
    ["a space", "some one@example.com"],
    ["six characters", "a@b.cd"],
  ])("rejects an e-mail with %s: 400 INVALID_EMAIL", async (_, email) => {
    const answer = await createAccount({ name: "bademail", email });
    expectError(answer, 400, "INVALID_EMAIL");
  });

  it("takes e-mails of 7 and 319 characters and rejects 320", async () => {
    const seven = "a@bc.de";
    expect(seven.length).toBe(7);
    const short = await createAccount({ name: "mail7", email: seven });
    expect(short.status).toBe(200);
    expect(short.body.email).toBe(seven);

    const domain = `${"a".repeat(63)}.`.repeat(3);
    const email319 = `${"e".repeat(64)}@${domain}${"b".repeat(58)}.com`;
    const email320 = `${"e".repeat(64)}@${domain}${"b".repeat(59)}.com`;
    expect([email319.length, email320.length]).toEqual([319, 320]);
    const longest = await createAccount({ name: "mail319", email: email319 });
    expect(longest.status).toBe(200);
    expect(longest.body.email).toBe(email319);
    expectError(await createAccount({ name: "mail320", email: email320 }), 400, "INVALID_EMAIL");
  });

  it.each([
    ["7 characters", "a".repeat(7)],
    ["513 characters", "a".repeat(513)],
    ["7 emoji (14 UTF-16 units)", "😀".repeat(7)],
    ["513 emoji", "😀".repeat(513)],
    ["a space", "pass word1"],
    ["a tab", "pass\tword1"],
    ["a full-width space", "pass\u3000word1"],
    ["a newline", "pass\nword1"],
    ["a NUL", "pass\u0000word1"],
  ])("rejects a passphrase of %s: 400 VULNERABLE_PASSPHRASE", async (_, passphrase) => {
    const answer = await createAccount({ name: "weakpass", passphrase });
    expectError(answer, 400, "VULNERABLE_PASSPHRASE");
  });

  it.each([
    ["8 characters", "pp8ascii", "a".repeat(8)],
    ["512 characters", "pp512ascii", "b".repeat(512)],
    ["8 emoji", "pp8emoji", "😀".repeat(8)],
    ["512 emoji", "pp512emoji", "😀".repeat(512)],
  ])("takes a passphrase of %s, and it logs in once verified", async (_, name, passphrase) => {
    const created = await createAccount({ name, passphrase });
    expect(created.status).toBe(200);
    const verified = await server.request("POST", `/accounts/${name}/verify_email`, {
      body: { token: await mailedToken(server, `${name}@example.com`) },
    });
    expectEmpty(verified);
    expect((await tryLogin(name, passphrase)).status).toBe(200);
  });

  it("rejects captcha `fail` and an empty captcha token with 400 YOU_ARE_BOT", async () => {
    expectError(await createAccount({ name: "robot", captcha_token: "fail" }), 400, "YOU_ARE_BOT");
    expectError(await createAccount({ name: "robot", captcha_token: "" }), 400, "YOU_ARE_BOT");
    // Nothing was created: the name is still free.
    expect((await createAccount({ name: "robot" })).status).toBe(200);
  });

  it("checks field rules before the captcha, and the captcha before uniqueness", async () => {
    expectError(await createAccount({ name: "-order", captcha_token: "fail" }), 400, "INVALID_ACCOUNT_NAME");
    expectError(await createAccount({ name: "order", email: "bad", captcha_token: "fail" }), 400, "INVALID_EMAIL");
    expectError(
      await createAccount({ name: "order", passphrase: "short", captcha_token: "fail" }),
      400,
      "VULNERABLE_PASSPHRASE",
    );
    await register(server, "ordertaken");
    expectError(
      await createAccount({ name: "ordertaken", email: "other@example.com", captcha_token: "fail" }),
      400,
      "YOU_ARE_BOT",
    );
    expectError(
      await createAccount({ name: "ordertaken2", email: "ordertaken@example.com", captcha_token: "fail" }),
      400,
      "YOU_ARE_BOT",
    );
  });

  it("rejects a name in use, case-insensitively: 409 ACCOUNT_NAME_IN_USE", async () => {
    expect((await createAccount({ name: "Alice", email: "alice-upper@example.com" })).status).toBe(200);
    expectError(await createAccount({ name: "alice", email: "alice-lower@example.com" }), 409, "ACCOUNT_NAME_IN_USE");
    expectError(await createAccount({ name: "ALICE", email: "alice-caps@example.com" }), 409, "ACCOUNT_NAME_IN_USE");
  });

  it("rejects an e-mail in use: 409 EMAIL_IN_USE", async () => {
    await register(server, "mailowner", "shared.mail@example.com");
    expectError(await createAccount({ name: "mailthief", email: "shared.mail@example.com" }), 409, "EMAIL_IN_USE");
  });

  it.each([
    ["a missing member", { name: "shape1", email: "shape1@example.com", captcha_token: "ok" }],
    ["a missing captcha token", { name: "shape2", email: "shape2@example.com", passphrase: PASSPHRASE }],
    [
      "a number for the name",
      { name: 12345678, email: "shape3@example.com", passphrase: PASSPHRASE, captcha_token: "ok" },
    ],
    [
      "a number for the passphrase",
      { name: "shape4", email: "shape4@example.com", passphrase: 12345678, captcha_token: "ok" },
    ],
    ["an array body", ["shape5", "shape5@example.com", PASSPHRASE, "ok"]],
    ["a string body", "shape6"],
  ])("rejects a body with %s: 400 INVALID_REQUEST", async (_, body) => {
    const answer = await server.request("POST", "/accounts", { body });
    expectError(answer, 400, "INVALID_REQUEST");
  });

  it("rejects malformed JSON and no body at all: 400 INVALID_REQUEST", async () => {
    const malformed = await server.request("POST", "/accounts", {
      payload: '{"name": "shape7",',
      headers: { "content-type": "application/json" },
    });
    expectError(malformed, 400, "INVALID_REQUEST");
    expectError(await server.request("POST", "/accounts"), 400, "INVALID_REQUEST");
  });

  it("lets exactly one of 10 concurrent registrations of one name through; the rest get 409", async () => {
    const spellings = ["racer", "Racer", "RACER", "rAcer", "raCer"];
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => createAccount({ name: spellings[i % 5], email: `racer${i}@example.com` })),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    for (const a of answers.filter((a) => a.status !== 200)) expectError(a, 409, "ACCOUNT_NAME_IN_USE");
  });

  it("lets exactly one of 10 concurrent registrations of one e-mail through; the rest get 409 EMAIL_IN_USE", async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => createAccount({ name: `samemail${i}`, email: "samemail@example.com" })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const a of answers.filter((a) => a.status !== 200)) expectError(a, 409, "EMAIL_IN_USE");
  });
});

describe("verify_email and resend_verify_email", () => {
  const verify = (name: string, token: string, prefix = "") =>
    server.request("POST", `${prefix}/accounts/${name}/verify_email`, { body: { token } });
  const resend = (name: string, captcha = "ok", prefix = "") =>
    server.request("POST", `${prefix}/accounts/${name}/resend_verify_email`, { body: { captcha_token: captcha } });

  it("refuses login before verification: 403 EMAIL_NOT_VERIFIED; afterwards login works", async () => {
    await register(server, "vlogin");
    expectError(await tryLogin("vlogin"), 403, "EMAIL_NOT_VERIFIED");
    expectEmpty(await verify("vlogin", await mailedToken(server, "vlogin@example.com")));
    expect((await tryLogin("vlogin")).status).toBe(200);
  });

  it("rejects a wrong token with 400 INVALID_TOKEN and leaves the account unverified", async () => {
    await register(server, "vwrong");
    expectError(await verify("vwrong", "not-the-token"), 400, "INVALID_TOKEN");
    expectError(await verify("vwrong", ""), 400, "INVALID_TOKEN");
    expectError(await tryLogin("vwrong"), 403, "EMAIL_NOT_VERIFIED");
  });

  it("rejects another account's token with 400 INVALID_TOKEN", async () => {
    await register(server, "vmine");
    await register(server, "vtheirs");
    const theirs = await mailedToken(server, "vtheirs@example.com");
    expectError(await verify("vmine", theirs), 400, "INVALID_TOKEN");
    // The token still works for its own account.
    expectEmpty(await verify("vtheirs", theirs));
  });

  it("uses a token once: the second use is 400 INVALID_TOKEN", async () => {
    await register(server, "vonce");
    const token = await mailedToken(server, "vonce@example.com");
    expectEmpty(await verify("vonce", token));
    expectError(await verify("vonce", token), 400, "INVALID_TOKEN");
  });

  it("invalidates the earlier token on resend; the new one works", async () => {
    await register(server, "vresend");
    const first = await mailedToken(server, "vresend@example.com");
    expectEmpty(await resend("vresend"));
    const second = await mailedToken(server, "vresend@example.com");
    expect(second).not.toBe(first);
    expectError(await verify("vresend", first), 400, "INVALID_TOKEN");
    expectEmpty(await verify("vresend", second));
    expect((await tryLogin("vresend")).status).toBe(200);
  });

  it("rejects a resend for a verified account: 400 ACCOUNT_ALREADY_VERIFIED", async () => {
    await account(server, "vdone");
    expectError(await resend("vdone"), 400, "ACCOUNT_ALREADY_VERIFIED");
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account on both", async () => {
    expectError(await verify("vnobody", "whatever"), 404, "ACCOUNT_NOT_FOUND");
    expectError(await resend("vnobody"), 404, "ACCOUNT_NOT_FOUND");
  });

  it("rejects a resend with captcha `fail` (YOU_ARE_BOT) or without captcha_token (INVALID_REQUEST)", async () => {
    await register(server, "vbot");
    const token = await mailedToken(server, "vbot@example.com");
    expectError(await resend("vbot", "fail"), 400, "YOU_ARE_BOT");
    const missing = await server.request("POST", "/accounts/vbot/resend_verify_email", { body: {} });
    expectError(missing, 400, "INVALID_REQUEST");
    const wrongType = await server.request("POST", "/accounts/vbot/resend_verify_email", {
      body: { captcha_token: 1 },
    });
    expectError(wrongType, 400, "INVALID_REQUEST");
    // No new token was issued: the first one still works.
    expectEmpty(await verify("vbot", token));
  });

  it("rejects a verify_email without a token: 400 INVALID_REQUEST", async () => {
    await register(server, "vnotoken");
    expectError(await server.request("POST", "/accounts/vnotoken/verify_email", { body: {} }), 400, "INVALID_REQUEST");
    expectError(await server.request("POST", "/accounts/vnotoken/verify_email"), 400, "INVALID_REQUEST");
  });

  it("rejects a token older than 24 hours: 400 INVALID_TOKEN", async () => {
    const created = await register(server, "vexpired");
    const token = await mailedToken(server, "vexpired@example.com");
    const { count } = await server.services.db.emailToken.updateMany({
      where: { accountId: BigInt(created.id) },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect(count).toBe(1);
    expectError(await verify("vexpired", token), 400, "INVALID_TOKEN");
    expectError(await tryLogin("vexpired"), 403, "EMAIL_NOT_VERIFIED");
  });

  it("serves both under /v0", async () => {
    await register(server, "vprefixed");
    expectEmpty(await resend("vprefixed", "ok", "/v0"));
    expectEmpty(await verify("vprefixed", await mailedToken(server, "vprefixed@example.com"), "/v0"));
    expectError(await resend("vprefixed", "ok", "/v0"), 400, "ACCOUNT_ALREADY_VERIFIED");
  });

  it("takes the qualified name @name@host in the path", async () => {
    await register(server, "vqualified");
    expectEmpty(await resend(qualified("vqualified")));
    expectEmpty(await verify(qualified("vqualified"), await mailedToken(server, "vqualified@example.com")));
    expect((await tryLogin("vqualified")).status).toBe(200);
  });
});

describe("GET /accounts/{account_name}", () => {
  let gina: TestAccount;
  let other: TestAccount;
  beforeAll(async () => {
    gina = await account(server, "gina");
    other = await account(server, "gother");
  });

  it("shows exactly the public fields, with zero counts and empty images", async () => {
    const answer = await getAccount("gina");
    expect(answer.status).toBe(200);
    expectShape(PublicAccountShape, answer.body);
    expect(answer.body).toEqual({
      id: gina.id,
      name: "@gina@murmur.test",
      nickname: expect.any(String),
      bio: "",
      avatar: "",
      header: "",
      followed_count: 0,
      following_count: 0,
      note_count: 0,
    });
    expect(answer.body.nickname.length).toBeGreaterThan(0);
  });

  it("finds the account by plain name, qualified name, other case and id", async () => {
    const plain = await getAccount("gina");
    for (const segment of [qualified("gina"), "GINA", gina.id]) {
      const answer = await getAccount(segment);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(plain.body);
    }
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown name, another host and an unused id", async () => {
    expectError(await getAccount("gnobody"), 404, "ACCOUNT_NOT_FOUND");
    expectError(await getAccount("@gina@elsewhere.test"), 404, "ACCOUNT_NOT_FOUND");
    expectError(await getAccount("1234567890123456789"), 404, "ACCOUNT_NOT_FOUND");
  });

  it("gives the owner the ETag md5(nickname:email); others and the anonymous get none", async () => {
    const own = await getAccount("gina", gina.token);
    expect(own.status).toBe(200);
    expect(own.headers.etag).toBe(etagOf(own.body.nickname, gina.email));
    const byOther = await getAccount("gina", other.token);
    expect(byOther.status).toBe(200);
    expect(byOther.headers.etag).toBeUndefined();
    const anonymous = await getAccount("gina");
    expect(anonymous.headers.etag).toBeUndefined();
  });
});

describe("PATCH /accounts/{account_name}", () => {
  it("updates nickname and bio: 200 with exactly the own fields and the new ETag", async () => {
    const pat = await account(server, "pat");
    const answer = await patchAccount("pat", pat.token, { nickname: "Pat ✨", bio: "line one\nline two" });
    expect(answer.status).toBe(200);
    expectShape(OwnAccountShape, answer.body);
    expect(answer.body).toEqual({
      id: pat.id,
      name: "@pat@murmur.test",
      nickname: "Pat ✨",
      bio: "line one\nline two",
      email: pat.email,
    });
    expect(answer.headers.etag).toBe(etagOf("Pat ✨", pat.email));
    const shown = await getAccount("pat", pat.token);
    expect(shown.body).toMatchObject({ nickname: "Pat ✨", bio: "line one\nline two" });
    expect(shown.headers.etag).toBe(answer.headers.etag);
  });

  it("applies an update whose If-Match is the current ETag", async () => {
    const pia = await account(server, "pia");
    const { headers } = await getAccount("pia", pia.token);
    const answer = await patchAccount("pia", pia.token, { nickname: "Pia" }, { "if-match": String(headers.etag) });
    expect(answer.status).toBe(200);
    expect(answer.body.nickname).toBe("Pia");
    expect(answer.headers.etag).toBe(etagOf("Pia", pia.email));
  });

  it("rejects a stale If-Match with 412 INVALID_ETAG and changes nothing", async () => {
    const pem = await account(server, "pem");
    const stale = String((await getAccount("pem", pem.token)).headers.etag);
    // No If-Match: the update is not guarded.
    const unguarded = await patchAccount("pem", pem.token, { nickname: "Pem one" });
    expect(unguarded.status).toBe(200);
    const refused = await patchAccount("pem", pem.token, { nickname: "Pem two", bio: "x" }, { "if-match": stale });
    expectError(refused, 412, "INVALID_ETAG");
    const shown = await getAccount("pem", pem.token);
    expect(shown.body).toMatchObject({ nickname: "Pem one", bio: "" });
    expect(shown.headers.etag).toBe(etagOf("Pem one", pem.email));
  });

  it("refuses another account's update: 403 NO_PERMISSION", async () => {
    await account(server, "pvictim");
    const intruder = await account(server, "pintruder");
    expectError(await patchAccount("pvictim", intruder.token, { nickname: "owned" }), 403, "NO_PERMISSION");
    expect((await getAccount("pvictim")).body.nickname).not.toBe("owned");
  });

  it("requires credentials: 401 UNAUTHORIZED with WWW-Authenticate", async () => {
    await account(server, "panon");
    const answer = await patchAccount("panon", undefined, { nickname: "anon" });
    expectError(answer, 401, "UNAUTHORIZED");
    expect(answer.headers["www-authenticate"]).toMatch(/^Bearer/);
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account", async () => {
    const pfind = await account(server, "pfind");
    expectError(await patchAccount("pnobody", pfind.token, { nickname: "x" }), 404, "ACCOUNT_NOT_FOUND");
  });

  it("rejects an empty body and members of the wrong type: 400 INVALID_REQUEST", async () => {
    const pempty = await account(server, "pempty");
    expectError(await patchAccount("pempty", pempty.token, {}), 400, "INVALID_REQUEST");
    expectError(await patchAccount("pempty", pempty.token, { nickname: 5 }), 400, "INVALID_REQUEST");
    expectError(await patchAccount("pempty", pempty.token, { locked: "yes" }), 400, "INVALID_REQUEST");
  });

  it("takes a nickname of 256 code points; 257 and empty are 400 INVALID_REQUEST", async () => {
    const pnick = await account(server, "pnick");
    const longest = "😀".repeat(256);
    const ok = await patchAccount("pnick", pnick.token, { nickname: longest });
    expect(ok.status).toBe(200);
    expect(ok.body.nickname).toBe(longest);
    expectError(await patchAccount("pnick", pnick.token, { nickname: "😀".repeat(257) }), 400, "INVALID_REQUEST");
    expectError(await patchAccount("pnick", pnick.token, { nickname: "" }), 400, "INVALID_REQUEST");
    expect((await getAccount("pnick")).body.nickname).toBe(longest);
  });

  it("takes a bio of 1024 code points and an empty bio; 1025 is 400 INVALID_REQUEST", async () => {
    const pbio = await account(server, "pbio");
    const longest = "é😀".repeat(512);
    const ok = await patchAccount("pbio", pbio.token, { bio: longest });
    expect(ok.status).toBe(200);
    expect(ok.body.bio).toBe(longest);
    expectError(await patchAccount("pbio", pbio.token, { bio: `${longest}x` }), 400, "INVALID_REQUEST");
    const cleared = await patchAccount("pbio", pbio.token, { bio: "" });
    expect(cleared.status).toBe(200);
    expect(cleared.body.bio).toBe("");
    expect((await getAccount("pbio")).body.bio).toBe("");
  });

  it("rejects control characters in the nickname: 400 INVALID_SEQUENCE", async () => {
    const pctl = await account(server, "pctl");
    expectError(await patchAccount("pctl", pctl.token, { nickname: "bell\u0007" }), 400, "INVALID_SEQUENCE");
    expectError(await patchAccount("pctl", pctl.token, { nickname: "nul\u0000" }), 400, "INVALID_SEQUENCE");
  });

  it("rejects a bad new passphrase (VULNERABLE_PASSPHRASE) and a bad e-mail (INVALID_EMAIL)", async () => {
    const pbad = await account(server, "pbad");
    expectError(await patchAccount("pbad", pbad.token, { passphrase: "short" }), 400, "VULNERABLE_PASSPHRASE");
    expectError(await patchAccount("pbad", pbad.token, { passphrase: "has space1" }), 400, "VULNERABLE_PASSPHRASE");
    expectError(await patchAccount("pbad", pbad.token, { email: "not-an-email" }), 400, "INVALID_EMAIL");
  });

  it("is all-or-nothing: a valid nickname with an invalid passphrase changes nothing", async () => {
    const pall = await account(server, "pall");
    const before = await getAccount("pall", pall.token);
    const answer = await patchAccount("pall", pall.token, { nickname: "Changed", bio: "new", passphrase: "short" });
    expectError(answer, 400, "VULNERABLE_PASSPHRASE");
    const after = await getAccount("pall", pall.token);
    expect(after.body).toEqual(before.body);
    expect(after.headers.etag).toBe(before.headers.etag);
    expect((await tryLogin("pall")).status).toBe(200);
  });

  it("defers an e-mail change (202, old e-mail shown) until the mailed token is verified", async () => {
    const pmail = await account(server, "pmail");
    const newEmail = "pmail.new@example.org";
    const answer = await patchAccount("pmail", pmail.token, { email: newEmail });
    expect(answer.status).toBe(202);
    expectShape(OwnAccountShape, answer.body);
    expect(answer.body).toMatchObject({ id: pmail.id, name: "@pmail@murmur.test", email: pmail.email });
    const nickname = answer.body.nickname;
    expect(answer.headers.etag).toBe(etagOf(nickname, pmail.email));
    // Still the old address until confirmed.
    expect((await getAccount("pmail", pmail.token)).headers.etag).toBe(etagOf(nickname, pmail.email));

    const token = await mailedToken(server, newEmail);
    const verified = await server.request("POST", "/accounts/pmail/verify_email", { body: { token } });
    expectEmpty(verified);
    expect((await getAccount("pmail", pmail.token)).headers.etag).toBe(etagOf(nickname, newEmail));
    const shown = await patchAccount("pmail", pmail.token, { bio: "moved" });
    expect(shown.status).toBe(200);
    expect(shown.body.email).toBe(newEmail);
    // The token is spent, and the new address is now taken.
    expectError(
      await server.request("POST", "/accounts/pmail/verify_email", { body: { token } }),
      400,
      "INVALID_TOKEN",
    );
    expectError(await createAccount({ name: "pmailcopy", email: newEmail }), 409, "EMAIL_IN_USE");
  });

  it("rejects an e-mail change to an address in use: 409 EMAIL_IN_USE", async () => {
    const pclash = await account(server, "pclash");
    const holder = await account(server, "pholder");
    expectError(await patchAccount("pclash", pclash.token, { email: holder.email }), 409, "EMAIL_IN_USE");
    const own = await getAccount("pclash", pclash.token);
    expect(own.headers.etag).toBe(etagOf(own.body.nickname, pclash.email));
  });

  it("applies a nickname at once when it comes with an e-mail change (202 shows the new nickname)", async () => {
    const pboth = await account(server, "pboth");
    const answer = await patchAccount("pboth", pboth.token, { nickname: "Both", email: "pboth.new@example.org" });
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ nickname: "Both", email: pboth.email });
    expect(answer.headers.etag).toBe(etagOf("Both", pboth.email));
    expect((await getAccount("pboth")).body.nickname).toBe("Both");
  });

  it("changes the passphrase: the old one fails, the new one works, earlier refresh tokens die", async () => {
    const ppass = await account(server, "ppass");
    const newPassphrase = "another-long-passphrase";
    const answer = await patchAccount("ppass", ppass.token, { passphrase: newPassphrase });
    expect(answer.status).toBe(200);
    expectShape(OwnAccountShape, answer.body);
    expectError(await tryLogin("ppass"), 400, "FAILED_TO_LOGIN");
    const fresh = await tryLogin("ppass", newPassphrase);
    expect(fresh.status).toBe(200);
    const refreshOld = await server.request("POST", "/refresh", { body: { refresh_token: ppass.refreshToken } });
    expectError(refreshOld, 400, "INVALID_TOKEN");
    const refreshNew = await server.request("POST", "/refresh", { body: { refresh_token: fresh.body.refresh_token } });
    expect(refreshNew.status).toBe(200);
  });

  it("accepts the `locked` extension", async () => {
    const plock = await account(server, "plock");
    const answer = await patchAccount("plock", plock.token, { locked: true });
    expect(answer.status).toBe(200);
    expectShape(OwnAccountShape, answer.body);
  });

  it("is served under /v0 and by qualified name", async () => {
    const pv0 = await account(server, "pv0");
    const answer = await server.request("PATCH", `/v0/accounts/${qualified("pv0")}`, {
      token: pv0.token,
      body: { nickname: "Vee" },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.nickname).toBe("Vee");
  });
});

describe("freeze and silence", () => {
  let mod: TestAccount;
  let admin: TestAccount;
  let normal: TestAccount;
  beforeAll(async () => {
    mod = await account(server, "mod1", "moderator");
    await account(server, "mod2", "moderator");
    admin = await account(server, "admin1", "admin");
    normal = await account(server, "fnormal");
  });

  const moderate = (method: "PUT" | "DELETE", path: string, token: string | undefined, body?: unknown) =>
    server.request(method, path, { token, body });

  it.each([
    ["freeze", "ffreeze"],
    ["silence", "fsilence"],
  ])("lets a moderator %s and undo it: 204 empty", async (action, name) => {
    await account(server, name);
    expectEmpty(await moderate("PUT", `/accounts/${name}/${action}`, mod.token, {}));
    expectEmpty(await moderate("DELETE", `/accounts/${name}/${action}`, mod.token, {}));
  });

  it("takes `{}` or no body at all, also under /v0 and by qualified name", async () => {
    await account(server, "fbody");
    for (const action of ["freeze", "silence"]) {
      expectEmpty(await moderate("PUT", `/accounts/fbody/${action}`, mod.token));
      expectEmpty(await moderate("DELETE", `/accounts/fbody/${action}`, mod.token));
      expectEmpty(await moderate("PUT", `/v0/accounts/fbody/${action}`, mod.token, {}));
      expectEmpty(await moderate("DELETE", `/v0/accounts/${qualified("fbody")}/${action}`, mod.token, {}));
    }
  });

  it("rejects freezing twice: 400 ALREADY_FROZEN", async () => {
    await account(server, "ftwice");
    expectEmpty(await moderate("PUT", "/accounts/ftwice/freeze", mod.token, {}));
    expectError(await moderate("PUT", "/accounts/ftwice/freeze", mod.token, {}), 400, "ALREADY_FROZEN");
  });

  it("refuses a normal caller: 403 NO_PERMISSION on every action", async () => {
    await account(server, "ftarget");
    for (const [method, action] of [
      ["PUT", "freeze"],
      ["DELETE", "freeze"],
      ["PUT", "silence"],
      ["DELETE", "silence"],
    ] as const) {
      expectError(await moderate(method, `/accounts/ftarget/${action}`, normal.token, {}), 403, "NO_PERMISSION");
    }
    expect((await tryLogin("ftarget")).status).toBe(200);
  });

  it("requires credentials: 401 UNAUTHORIZED", async () => {
    const answer = await moderate("PUT", "/accounts/fnormal/freeze", undefined, {});
    expectError(answer, 401, "UNAUTHORIZED");
    expect(answer.headers["www-authenticate"]).toMatch(/^Bearer/);
  });

  it("refuses a moderator on a moderator, an admin or itself: 403 NO_PERMISSION", async () => {
    for (const target of ["mod2", "admin1", "mod1"]) {
      for (const action of ["freeze", "silence"]) {
        expectError(await moderate("PUT", `/accounts/${target}/${action}`, mod.token, {}), 403, "NO_PERMISSION");
      }
    }
    expect((await tryLogin("mod2")).status).toBe(200);
  });

  it("lets an admin freeze and silence a moderator", async () => {
    for (const action of ["freeze", "silence"]) {
      expectEmpty(await moderate("PUT", `/accounts/mod2/${action}`, admin.token, {}));
      expectEmpty(await moderate("DELETE", `/accounts/mod2/${action}`, admin.token, {}));
    }
    expect((await tryLogin("mod2")).status).toBe(200);
  });

  it("answers 404 ACCOUNT_NOT_FOUND for an unknown account", async () => {
    for (const [method, action] of [
      ["PUT", "freeze"],
      ["DELETE", "freeze"],
      ["PUT", "silence"],
      ["DELETE", "silence"],
    ] as const) {
      expectError(await moderate(method, `/accounts/fnobody/${action}`, mod.token, {}), 404, "ACCOUNT_NOT_FOUND");
    }
  });

  it("locks a frozen account out of login, PATCH and refresh, keeps it public, and lets it back in", async () => {
    const ice = await account(server, "ice");
    expectEmpty(await moderate("PUT", "/accounts/ice/freeze", mod.token, {}));

    expectError(await tryLogin("ice"), 403, "YOU_ARE_FROZEN");
    expectError(await patchAccount("ice", ice.token, { nickname: "thawed" }), 403, "YOU_ARE_FROZEN");
    const refreshed = await server.request("POST", "/refresh", { body: { refresh_token: ice.refreshToken } });
    expectError(refreshed, 403, "YOU_ARE_FROZEN");
    const shown = await getAccount("ice", ice.token);
    expect(shown.status).toBe(200);
    expect(shown.body.name).toBe("@ice@murmur.test");

    expectEmpty(await moderate("DELETE", "/accounts/ice/freeze", mod.token, {}));
    expect((await tryLogin("ice")).status).toBe(200);
    expect((await patchAccount("ice", ice.token, { nickname: "thawed" })).status).toBe(200);
  });

  it("freezes by account id too", async () => {
    const byId = await account(server, "fbyid");
    expectEmpty(await moderate("PUT", `/accounts/${byId.id}/freeze`, mod.token, {}));
    expectError(await tryLogin("fbyid"), 403, "YOU_ARE_FROZEN");
    expectEmpty(await moderate("DELETE", `/accounts/${byId.id}/freeze`, mod.token, {}));
  });
});
