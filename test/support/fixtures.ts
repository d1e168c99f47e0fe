// Named accounts built through the public API: register, verify with the mailed token, log in.
import fs from "node:fs";
import path from "node:path";
import { setRole } from "../../src/domain/accounts/service.ts";
import type { TestServer } from "./server.ts";

export interface TestAccount {
  id: string;
  name: string;
  email: string;
  passphrase: string;
  token: string;
  refreshToken: string;
}

export const PASSPHRASE = "correct-horse-battery";

/** The newest verification token mailed to `email`, read from the outbox .eml files. */
export function mailedToken(server: Pick<TestServer, "dataDir">, email: string): string {
  const outbox = path.join(server.dataDir, "outbox");
  const files = fs.existsSync(outbox) ? fs.readdirSync(outbox).sort() : [];
  for (const file of files.reverse()) {
    const text = fs.readFileSync(path.join(outbox, file), "utf8").replace(/=\r?\n/g, "");
    if (!new RegExp(`^To: .*${email.replace(/[.+]/g, "\\$&")}`, "mi").test(text)) continue;
    const match = /^Verification token: (\S+)$/m.exec(text);
    if (match) return match[1];
  }
  throw new Error(`no verification mail to ${email}`);
}

export async function register(server: TestServer, name: string, email = `${name}@example.com`) {
  const answer = await server.request("POST", "/accounts", {
    body: { name, email, passphrase: PASSPHRASE, captcha_token: "ok" },
  });
  if (answer.status !== 200) throw new Error(`register ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as { id: string; name: string; email: string };
}

export async function login(server: TestServer, name: string, passphrase = PASSPHRASE) {
  const answer = await server.request("POST", "/login", { body: { name, passphrase, captcha_token: "ok" } });
  if (answer.status !== 200) throw new Error(`login ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as { authorization_token: string; refresh_token: string; expires_in: number };
}

/** A verified, logged-in account; `role` is given as the operator CLI would. */
export async function account(
  server: TestServer,
  name: string,
  role: "normal" | "moderator" | "admin" = "normal",
): Promise<TestAccount> {
  const created = await register(server, name);
  const verified = await server.request("POST", `/accounts/${name}/verify_email`, {
    body: { token: mailedToken(server, created.email) },
  });
  if (verified.status !== 204) throw new Error(`verify ${name}: ${verified.status}`);
  if (role !== "normal") await setRole(server.services, name, role);
  const tokens = await login(server, name);
  return {
    id: created.id,
    name,
    email: created.email,
    passphrase: PASSPHRASE,
    token: tokens.authorization_token,
    refreshToken: tokens.refresh_token,
  };
}

/** Uploads a file to POST /drive as `who`; returns the drive file's JSON. */
export async function uploadFile(
  server: TestServer,
  who: Pick<TestAccount, "token">,
  bytes: Buffer,
  name: string,
  fields: Record<string, string> = {},
): Promise<{ id: string; mime: string; hash: string; url: string; thumbnail?: string }> {
  const form = new FormData();
  form.set("name", name);
  for (const [key, value] of Object.entries(fields)) form.set(key, value);
  form.set("file", new Blob([new Uint8Array(bytes)]), name);
  const encoded = new Response(form);
  const answer = await server.app.inject({
    method: "POST",
    url: "/drive",
    headers: { "content-type": encoded.headers.get("content-type") ?? "", authorization: `Bearer ${who.token}` },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  if (answer.statusCode !== 200) throw new Error(`upload ${name}: ${answer.statusCode} ${answer.body}`);
  return answer.json();
}

/**
 * A verified account with a token, made by the factory rather than through the API: for a
 * server whose rate limits would refuse the registrations and logins `account` makes.
 */
export async function directAccount(server: TestServer, name: string): Promise<TestAccount> {
  const { services } = server;
  const created = await services.db.account.create({
    data: {
      id: services.ids.next(),
      name,
      nameKey: name.toLowerCase(),
      email: `${name}@example.com`,
      emailKey: `${name}@example.com`.toLowerCase(),
      nickname: name,
      passphraseHash: "!",
      verified: true,
    },
  });
  const { token } = await services.tokens.sign(created.id, "access");
  return { id: created.id.toString(), name, email: created.email, passphrase: "", token, refreshToken: "" };
}
