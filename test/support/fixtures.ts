// Named accounts built through the public API: register, verify with the mailed token, log in.
import fs from "node:fs";
import path from "node:path";
import { setRole } from "../../src/domain/accounts/service.ts";
import type { RemoteNote } from "../../src/domain/notes/remote.ts";
import { type TestServer, testServersOn } from "./server.ts";

export interface TestAccount {
  id: string;
  name: string;
  email: string;
  passphrase: string;
  token: string;
  refreshToken: string;
}

export const PASSPHRASE = "correct-horse-battery";

/** Where mail may be found: a test server (its outbox, and its queue), or a server process. */
export type MailReader = Pick<TestServer, "dataDir"> & Partial<Pick<TestServer, "services">>;

/**
 * The newest verification token mailed to `email`. Mail goes out through the queue after the
 * answer (src/mail/queue.ts), so this waits: for a test server until nothing queued to `email`
 * is left, for a server process until a mail is there. A fleet's mail is written by whichever
 * instance sent it: `at` names them all.
 */
export async function mailedToken(
  at: MailReader | MailReader[],
  email: string,
  pattern = /^Verification token: (\S+)$/m,
): Promise<string> {
  const given = Array.isArray(at) ? at : [at];
  // Test servers of this file on the same database send each other's mail too.
  const readers = [
    ...new Set([...given, ...given.flatMap((r) => ("databaseUrl" in r ? testServersOn(r.databaseUrl as string) : []))]),
  ];
  const queue = readers.find((reader) => reader.services)?.services?.db;
  const to = new RegExp(`^To: .*${email.replace(/[.+]/g, "\\$&")}`, "mi");
  const deadline = Date.now() + 15_000;
  for (;;) {
    const waiting = queue
      ? await queue.mailOutbox.count({ where: { recipient: { equals: email, mode: "insensitive" } } })
      : 0;
    if (waiting === 0) {
      const files = readers.flatMap(({ dataDir }) => {
        const outbox = path.join(dataDir, "outbox");
        const names = fs.existsSync(outbox) ? fs.readdirSync(outbox).filter((name) => name.endsWith(".eml")) : [];
        return names.map((name) => ({ name, file: path.join(outbox, name) }));
      });
      // Named by queue id: the newest sorts last, whichever instance wrote it.
      for (const { file } of files.sort((x, y) => (x.name < y.name ? 1 : -1))) {
        const text = fs.readFileSync(file, "utf8").replace(/=\r?\n/g, "");
        if (!to.test(text)) continue;
        const match = pattern.exec(text);
        if (match) return match[1];
      }
    }
    if (Date.now() > deadline) throw new Error(`no mail to ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
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
    body: { token: await mailedToken(server, created.email) },
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

/** A public remote note `uri` of remote account `authorId`, replying to nothing: what storeRemoteNote takes. */
export function publicRemoteNote(uri: string, authorId: bigint, content = "hello"): RemoteNote {
  return {
    uri,
    url: null,
    authorId,
    content,
    cwComment: "",
    visibility: "public",
    sendToId: null,
    replyToId: null,
    renoteId: null,
    mentionedIds: [],
    attachments: [],
  };
}
