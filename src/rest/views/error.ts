// The documented error answer (spec 7; CONTRACT 2): exactly `{"error": CODE}`.
import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../../domain/errors.ts";
import { named } from "./wire.ts";

export const ErrorShape = named(
  "Error",
  'Every failure: `{"error": CODE}`.',
  z.strictObject({ error: z.enum(ERROR_CODES) }),
);

/** The error answer of one status, narrowed to the codes a route gives with it. */
export function errorShape(codes: ErrorCode[]) {
  return z.strictObject({ error: z.enum(codes as [ErrorCode, ...ErrorCode[]]) });
}
