// A forgotten passphrase (CONTRACT 13): POST /accounts/{name}/reset_passphrase always answers 204
// and mails `Reset token: <token>` only when the account exists; POST /accounts/{name}/passphrase
// sets it once with that token and ends every session.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, login, type TestAccount } from "./support/fixtures.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let ada: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  ada = await account(server, "ada");
});

afterAll(() => server?.close());

/** Reset mails in the outbox so far, waited for up to `ms` until there are `count`. */
async function resetTokens(count: number, ms = 3_000): Promise<string[]> {
  const outbox = path.join(server.dataDir, "outbox");
  const deadline = Date.now() + ms;
  for (;;) {
    const tokens = fs
      .readdirSync(outbox)
      .sort()
      .map(
        (file) =>
          /^Reset token: (\S+)$/m.exec(fs.readFileSync(path.join(outbox, file), "utf8").replace(/=\r?\n/g, ""))?.[1],
      )
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
