// The one error type of the domain. Its code is one of the API document's or one Murmur adds
// (docs/http.md#error-codes); http/errors.ts gives each its HTTP status.

export const ERROR_CODES = [
  // the API document's
  "INVALID_ACCOUNT_NAME",
  "TOO_LONG_ACCOUNT_NAME",
  "EMAIL_IN_USE",
  "ACCOUNT_NAME_IN_USE",
  "YOU_ARE_BOT",
  "INVALID_SEQUENCE",
  "VULNERABLE_PASSPHRASE",
  "ACCOUNT_NOT_FOUND",
  "INVALID_ETAG",
  "ALREADY_FROZEN",
  "NO_PERMISSION",
  "ACCOUNT_ALREADY_VERIFIED",
  "INVALID_TOKEN",
  "EXPIRED_TOKEN",
  "FAILED_TO_LOGIN",
  "YOU_ARE_FROZEN",
  "ALREADY_FOLLOWING",
  "YOU_ARE_NOT_FOLLOW_ACCOUNT",
  "YOU_ARE_BLOCKED",
  "TOO_MANY_ATTACHMENTS",
  "TOO_MANY_CONTENT",
  "TOO_MANY_CHAR_LENGTH",
  "NO_DESTINATION",
  "INVALID_VISIBILITY",
  "YOU_ARE_SILENCED",
  "ATTACHMENT_NOT_FOUND",
  "NOTE_NOT_FOUND",
  "ALREADY_REACTED",
  "NOT_REACTED",
  "EMOJI_NOT_FOUND",
  "TITLE_TOO_LONG",
  "LIST_NOTFOUND",
  "TOO_MANY_TARGETS",
  "FILE_NOT_FOUND",
  "FILE_SIZE_TOO_BIG",
  "FILE_NAME_TOO_LONG",
  "INVALID_TIMELINE_TYPE",
  "NOTHING_LEFT",
  "INVALID_QUERY",
  // Murmur's, where no documented code fits
  "INVALID_REQUEST",
  "INVALID_EMAIL",
  "EMAIL_NOT_VERIFIED",
  "UNSUPPORTED_FILE_TYPE",
  "NOT_FOUND",
  "FOLLOW_REQUEST_NOT_FOUND",
  "NOTIFICATION_NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "PAYLOAD_TOO_LARGE",
  "RATE_LIMITED",
  "INTERNAL_ERROR",
  "SERVICE_UNAVAILABLE",
  "UNAUTHORIZED",
  "IDEMPOTENCY_KEY_REUSED",
  // docs/accounts.md#reports
  "REPORT_NOT_FOUND",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface DomainErrorOptions {
  /** The request's credentials (Authorization header) are missing or unusable. */
  credentials?: boolean;
  /**
   * What is wrong, in words (the CLI prints it). Sent to a client only with DETAILED_CODES, so
   * there it names the request's own members and rules, nothing of the server's state.
   */
  detail?: string;
}

/**
 * The codes whose `detail` a client is told (REST's `detail` member and GraphQL's `message`,
 * extensions): a bare INVALID_REQUEST leaves a developer guessing which member broke which rule.
 */
export const DETAILED_CODES: readonly ErrorCode[] = ["INVALID_REQUEST", "INVALID_QUERY"];

/** What a client is told of `err` beside its code, if anything. */
export function clientDetail(err: DomainError): string | undefined {
  return DETAILED_CODES.includes(err.code) ? err.detail : undefined;
}

export class DomainError extends Error {
  readonly credentials: boolean;
  readonly detail?: string;

  constructor(
    readonly code: ErrorCode,
    options: DomainErrorOptions = {},
  ) {
    super(code);
    this.name = "DomainError";
    this.credentials = options.credentials ?? false;
    this.detail = options.detail;
  }
}
