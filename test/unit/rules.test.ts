// Account field rules (docs/accounts.md#names, docs/accounts.md#field-rules), lengths in code
// points (docs/http.md#lengths).
import { describe, expect, it } from "vitest";
import {
  checkAccountName,
  checkEmail,
  checkNotBlank,
  checkPassphrase,
  checkText,
  localNameOf,
} from "../../src/domain/accounts/rules.ts";

function codeOf(check: () => void): string {
  try {
    check();
    return "ok";
  } catch (err) {
    return (err as { code: string }).code;
  }
}

describe("account name", () => {
  it.each([
    ["a", "ok"],
    ["a.b-c_d", "ok"],
    ["A9", "ok"],
    ["a".repeat(64), "ok"],
    ["a".repeat(65), "TOO_LONG_ACCOUNT_NAME"],
    ["", "INVALID_ACCOUNT_NAME"],
    [".a", "INVALID_ACCOUNT_NAME"],
    ["a-", "INVALID_ACCOUNT_NAME"],
    ["_", "INVALID_ACCOUNT_NAME"],
    ["a b", "INVALID_ACCOUNT_NAME"],
    ["ä", "INVALID_ACCOUNT_NAME"],
    ["a@b", "INVALID_ACCOUNT_NAME"],
    // Digits only: a path segment of digits is an account id (docs/http.md#account-paths).
    ["0", "INVALID_ACCOUNT_NAME"],
    ["12345", "INVALID_ACCOUNT_NAME"],
    ["648771800678793216", "INVALID_ACCOUNT_NAME"],
    ["9".repeat(64), "INVALID_ACCOUNT_NAME"],
    ["1a", "ok"],
    ["1.5", "ok"],
  ])("%j -> %s", (name, code) => expect(codeOf(() => checkAccountName(name))).toBe(code));
});

describe("e-mail", () => {
  it.each([
    ["a@b.cd", "INVALID_EMAIL"],
    ["ab@c.de", "ok"],
    [`${"a".repeat(64)}@${"b".repeat(250)}.com`, "ok"],
    [`${"a".repeat(64)}@${"b".repeat(251)}.com`, "INVALID_EMAIL"],
    ["no-at-sign.example", "INVALID_EMAIL"],
    ["a b@example.com", "INVALID_EMAIL"],
  ])("%j -> %s", (email, code) => expect(codeOf(() => checkEmail(email))).toBe(code));
});

describe("passphrase", () => {
  it.each([
    ["1234567", "VULNERABLE_PASSPHRASE"],
    ["12345678", "ok"],
    ["😀".repeat(8), "ok"],
    ["😀".repeat(7), "VULNERABLE_PASSPHRASE"],
    ["x".repeat(512), "ok"],
    ["x".repeat(513), "VULNERABLE_PASSPHRASE"],
    ["😀".repeat(512), "ok"],
    ["with space", "VULNERABLE_PASSPHRASE"],
    ["with\ttab1", "VULNERABLE_PASSPHRASE"],
    ["full\u3000width", "VULNERABLE_PASSPHRASE"],
    ["new\nline12", "VULNERABLE_PASSPHRASE"],
    ["nul\u0000byte1", "VULNERABLE_PASSPHRASE"],
    ["lone\ud800surrogate", "VULNERABLE_PASSPHRASE"],
  ])("%j -> %s", (passphrase, code) => expect(codeOf(() => checkPassphrase(passphrase))).toBe(code));
});

describe("display text", () => {
  it.each([
    ["Alice 🌸", false, "ok"],
    ["", false, "INVALID_REQUEST"],
    ["x".repeat(257), false, "INVALID_REQUEST"],
    ["bell\u0007", false, "INVALID_SEQUENCE"],
    ["line\nbreak", false, "INVALID_SEQUENCE"],
    ["line\nbreak", true, "ok"],
    ["bad\ud800", true, "INVALID_SEQUENCE"],
  ])("%j (line breaks %s) -> %s", (text, lines, code) =>
    expect(codeOf(() => checkText(text, 1, 256, lines))).toBe(code),
  );
});

describe("blank text (nicknames, list titles)", () => {
  it.each([
    ["", "INVALID_REQUEST"],
    [" \t\n", "INVALID_REQUEST"],
    ["\u3000\u00a0", "INVALID_REQUEST"],
    ["\u200b\u200c\u200d\u2060\ufeff", "INVALID_REQUEST"],
    ["\u3164\u115f\ufe0f", "INVALID_REQUEST"],
    [" a ", "ok"],
    ["😀", "ok"],
  ])("%j -> %s", (text, code) => expect(codeOf(() => checkNotBlank(text))).toBe(code));
});

describe("qualified names", () => {
  it.each([
    ["alice", "alice"],
    ["@alice", "alice"],
    ["@alice@murmur.test:3000", "alice"],
    ["@alice@MURMUR.test", "alice"],
    ["@alice@elsewhere.example", undefined],
    ["@al ice", undefined],
    ["a@b@c", undefined],
  ])("%j -> %j", (text, name) => expect(localNameOf(text, "murmur.test:3000")).toBe(name));
});
