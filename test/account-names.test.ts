// Account names against ids (docs/http.md#account-paths, docs/accounts.md#names): a name of digits
// only is refused, so no new account can take a deleted account's id as its name; a path segment or
// `send_to` that is an account's id means that account, deleted or not, and is never read as a
// name. And the display text people read (a nickname, a list's title) cannot be blank.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { expectError } from "./support/expect.ts";
import { account, PASSPHRASE, type TestAccount } from "./support/fixtures.ts";
import { gql } from "./support/graphql.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let eve: TestAccount;
/** The id of `vic1`, deleted. */
let vicId: string;

const register = (name: string) =>
  server.request("POST", "/accounts", {
    body: { name, email: `${name}-x@example.com`, passphrase: PASSPHRASE, captcha_token: "ok" },
  });

/** An account as an installation older than the all-digit rule could hold, straight in the database. */
async function olderAccount(name: string): Promise<void> {
  await server.services.db.account.create({
    data: {
      id: server.services.ids.next(),
      name,
      nameKey: name,
      email: `older${name}@example.com`,
      emailKey: `older${name}@example.com`,
      nickname: name,
      passphraseHash: "!",
      verified: true,
    },
  });
}

beforeAll(async () => {
  server = await startTestServer();
  eve = await account(server, "eve");
  const vic = await account(server, "vic1");
  vicId = vic.id;
  const deleted = await server.request("DELETE", "/accounts/vic1", {
    token: vic.token,
    body: { passphrase: PASSPHRASE },
  });
  expect(deleted.status).toBe(204);
});
afterAll(() => server?.close());

describe("a name of digits only", () => {
  it("is refused at registration with INVALID_ACCOUNT_NAME: a deleted account's id, or any", async () => {
    expectError(await register(vicId), 400, "INVALID_ACCOUNT_NAME");
    expectError(await register("12345"), 400, "INVALID_ACCOUNT_NAME");
    expectError(await register("0"), 400, "INVALID_ACCOUNT_NAME");
    const created = await gql(
      server,
      `mutation ($name: String!) { createAccount(input: { name: $name, email: "g@example.com", passphrase: "${PASSPHRASE}", captchaToken: "ok" }) {
        __typename ... on DomainError { code } } }`,
      { name: "4242" },
    );
    expect(created.createAccount).toEqual({ __typename: "DomainError", code: "INVALID_ACCOUNT_NAME" });
  });

  it("may still hold digits beside something else", async () => {
    for (const name of ["vic2", "2vic", "1.5", "1-2"]) expect((await register(name)).status).toBe(200);
  });
});

describe("a deleted account's id", () => {
  it("is 404 ACCOUNT_NOT_FOUND, also where an older account holds it as its name", async () => {
    expectError(await server.request("GET", `/accounts/${vicId}`), 404, "ACCOUNT_NOT_FOUND");
    await olderAccount(vicId);
    expectError(await server.request("GET", `/accounts/${vicId}`), 404, "ACCOUNT_NOT_FOUND");
    expectError(await server.request("GET", `/timeline/accounts/${vicId}`), 404, "ACCOUNT_NOT_FOUND");
    expectError(
      await server.request("POST", `/accounts/${vicId}/follow`, { token: eve.token, body: {} }),
      404,
      "ACCOUNT_NOT_FOUND",
    );
  });

  it("is refused as a direct note's send_to, and nothing reaches the account named so", async () => {
    const answer = await server.request("POST", "/notes", {
      token: eve.token,
      body: { content: "for vic's eyes only", visibility: "direct", send_to: vicId },
    });
    expectError(answer, 404, "ACCOUNT_NOT_FOUND");
    expect(await server.services.db.note.count({ where: { authorId: BigInt(eve.id), visibility: "direct" } })).toBe(0);
  });

  it("answers a passphrase reset quietly without mailing anyone", async () => {
    const answer = await server.request("POST", `/accounts/${vicId}/reset_passphrase`, {
      body: { captcha_token: "ok" },
    });
    expect(answer.status).toBe(204);
    expect(await server.services.db.emailToken.count({ where: { purpose: "passphrase_reset" } })).toBe(0);
  });
});

describe("an older account with an all-digit name", () => {
  it("stays reachable by its name while that is no account's id", async () => {
    await olderAccount("31337");
    const answer = await server.request("GET", "/accounts/31337");
    expect(answer.status).toBe(200);
    expect(answer.body.name).toBe("@31337@murmur.test");
    const note = await act.post(server, eve, { content: "hi", visibility: "direct", send_to: "31337" });
    expect(note.send_to).toBe(answer.body.id);
  });
});

describe("blank display text", () => {
  const patch = (nickname: string) =>
    server.request("PATCH", "/accounts/eve", { token: eve.token, body: { nickname } });

  it.each([
    ["spaces", "   "],
    ["a full-width space", "\u3000"],
    ["zero-width characters", "\u200b\u200d"],
    ["a Hangul filler", "\u3164"],
  ])("a nickname of %s is 400 INVALID_REQUEST, as a list title of it is", async (_, text) => {
    expectError(await patch(text), 400, "INVALID_REQUEST");
    expectError(
      await server.request("POST", "/lists", { token: eve.token, body: { title: text } }),
      400,
      "INVALID_REQUEST",
    );
  });

  it("leaves the nickname as it was, and takes one with something to see", async () => {
    expect((await server.request("GET", "/accounts/eve")).body.nickname).toBe("eve");
    const answer = await patch(" Eve ");
    expect(answer.status).toBe(200);
    expect(answer.body.nickname).toBe(" Eve ");
  });

  it("is the same result through GraphQL", async () => {
    const data = await gql(
      server,
      `mutation { updateAccount(name: "eve", input: { nickname: "  " }) { __typename ... on DomainError { code } } }`,
      {},
      eve,
    );
    expect(data.updateAccount).toEqual({ __typename: "DomainError", code: "INVALID_REQUEST" });
  });
});
