// Assertions on answers shared by the HTTP tests.
import { expect } from "vitest";
import type { Answer } from "./server.ts";

/** Exactly the documented error: this status and the body `{"error": code}`. */
export function expectError(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: { error: code } });
}

/** A 401 of the credential family: exact body and a `WWW-Authenticate: Bearer` challenge. */
export function expectUnauthorized(answer: Answer, code: string): void {
  expectError(answer, 401, code);
  expect(String(answer.headers["www-authenticate"])).toMatch(/^Bearer/);
}
