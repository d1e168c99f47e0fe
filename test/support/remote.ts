// A server process's REST API as a client calls it over its port (test/support/instances.ts), and
// named accounts made through it: registered, verified with the mailed token, logged in.
import { expect } from "vitest";
import { mailedToken, PASSPHRASE } from "./fixtures.ts";
import { type Instance, instancesOn } from "./instances.ts";

export interface RemoteAccount {
  id: string;
  name: string;
  token: string;
}

/** One request to `at`, JSON in and out; `body` undefined sends none. Never a hang: 10 s at most. */
export async function call(at: Pick<Instance, "url">, method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${at.url}${url}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as any };
}

/**
 * The account `name`, made on `at` and logged in there. `fleet`: the instances sharing `at`'s
 * database, any of which may send its mail (by default those of this file on its DATABASE_URL).
 */
export async function accountOn(
  at: Instance,
  name: string,
  fleet: Instance[] = [at, ...instancesOn(at.databaseUrl)],
): Promise<RemoteAccount> {
  const email = `${name}@example.com`;
  const registered = await call(at, "POST", "/accounts", { name, email, passphrase: PASSPHRASE, captcha_token: "ok" });
  expect(registered.status).toBe(200);
  const token = await mailedToken(fleet, email);
  expect((await call(at, "POST", `/accounts/${name}/verify_email`, { token })).status).toBe(204);
  const login = await call(at, "POST", "/login", { name, passphrase: PASSPHRASE, captcha_token: "ok" });
  expect(login.status).toBe(200);
  return { id: registered.body.id, name, token: login.body.authorization_token };
}
