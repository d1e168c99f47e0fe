// What tests do to set a scene, through the public API as a client would, each step checked to
// succeed: follow an account, post a note, moderate an account.
import { expect } from "vitest";
import type { z } from "zod";
import type { NoteShape } from "../../src/rest/views/note.ts";
import type { TestAccount } from "./fixtures.ts";
import type { TestServer } from "./server.ts";

type Caller = Pick<TestAccount, "token">;

/** `who` follows `target` (a name, plain or qualified, or an account): 201, `{pending}`. */
export async function follow(
  server: TestServer,
  who: Caller,
  target: string | Pick<TestAccount, "name">,
): Promise<{ pending: boolean }> {
  const name = typeof target === "string" ? target : target.name;
  const answer = await server.request("POST", `/accounts/${name}/follow`, { body: {}, token: who.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

/** `who` creates a note (`POST /notes` with `body`): 201; the note as its create answers it. */
export async function post(
  server: TestServer,
  who: Caller,
  body: Record<string, unknown>,
): Promise<z.infer<typeof NoteShape>> {
  const answer = await server.request("POST", "/notes", { body, token: who.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

export type ModerationAction = "freeze" | "unfreeze" | "silence" | "unsilence";

/** `moderator` freezes or silences the account `name`, or lifts it (`unfreeze`, `unsilence`): 204. */
export async function moderate(
  server: TestServer,
  moderator: Caller,
  name: string,
  action: ModerationAction,
): Promise<void> {
  const lift = action.startsWith("un");
  const path = `/accounts/${name}/${lift ? action.slice(2) : action}`;
  const answer = await server.request(lift ? "DELETE" : "PUT", path, { body: {}, token: moderator.token });
  expect({ status: answer.status, body: answer.body }).toEqual({ status: 204, body: "" });
}
