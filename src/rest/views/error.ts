// The documented error answer (docs/http.md#errors): exactly `{"error": CODE}`.
import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../../domain/errors.ts";
import { named } from "../../http/views/wire.ts";

/** The X-Error-Detail header (extension), as documented. */
export const ERROR_DETAIL = {
  name: "X-Error-Detail",
  required: false,
  description:
    "extension: what was wrong (the member and the rule), in English, for a developer to read (non-ASCII " +
    "percent-encoded); only with INVALID_REQUEST and INVALID_QUERY, and not always. The code alone is the contract.",
} as const;

export const ErrorShape = named(
  "Error",
  'Every failure: exactly `{"error": CODE}`; INVALID_REQUEST and INVALID_QUERY may say what was wrong in the X-Error-Detail header (extension).',
  z.strictObject({ error: z.enum(ERROR_CODES) }),
);

/** The error answer of one status, narrowed to the codes a route gives with it. */
export function errorShape(codes: ErrorCode[]) {
  return z.strictObject({ error: z.enum(codes as [ErrorCode, ...ErrorCode[]]) });
}
