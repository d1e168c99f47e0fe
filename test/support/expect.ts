// Assertions on answers shared by the HTTP tests.
import { expect } from "vitest";
import { DETAILED_CODES } from "../../src/domain/errors.ts";
import type { Answer } from "./server.ts";

/**
 * Exactly the documented error: this status and the body `{"error": code}`; an X-Error-Detail
 * header only where the code may carry one (DETAILED_CODES; README, Errors).
 */
export function expectError(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, body: answer.body }).toEqual({ status, body: { error: code } });
  const detail = answer.headers["x-error-detail"];
  if (detail !== undefined) expect(DETAILED_CODES, `${code} with detail ${String(detail)}`).toContain(code);
}

/** A 401 of the credential family: exact body and a `WWW-Authenticate: Bearer` challenge. */
export function expectUnauthorized(answer: Answer, code: string): void {
  expectError(answer, 401, code);
  expect(String(answer.headers["www-authenticate"])).toMatch(/^Bearer/);
}
