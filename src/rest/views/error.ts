// The documented error answer (spec 7; CONTRACT 2): exactly `{"error": CODE}`.
import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../../domain/errors.ts";
import { named } from "./wire.ts";

export const DETAIL_SCHEMA = {
  type: "string",
  description:
    "extension: what was wrong (the member and the rule), in English, for a developer to read; only with " +
    "INVALID_REQUEST and INVALID_QUERY, and not always. The code alone is the contract.",
} as const;

export const ErrorShape = named(
  "Error",
  'Every failure: `{"error": CODE}`; INVALID_REQUEST and INVALID_QUERY may add `detail` (extension).',
  z.strictObject({ error: z.enum(ERROR_CODES), detail: z.string().optional().meta(DETAIL_SCHEMA) }),
);

/** The error answer of one status, narrowed to the codes a route gives with it. */
export function errorShape(codes: ErrorCode[]) {
  return z.strictObject({ error: z.enum(codes as [ErrorCode, ...ErrorCode[]]) });
}
