// Query parameters arrive as text; these read them as the types the OpenAPI document gives them.
import { z } from "zod";

/** The OpenAPI schema of each query parameter type below, in place of its text form. */
export const queryTypes = z.registry<Record<string, unknown>>();

/** `true` or `false`; anything else is 400 INVALID_REQUEST (docs/timelines.md#paging). */
export const queryBoolean = z.enum(["true", "false"]).transform((v) => v === "true");
queryTypes.add(queryBoolean, { type: "boolean" });

/** A whole number written in decimal; its range, documented here, is the domain's rule. */
export function queryInteger(min: number, max: number) {
  const schema = z
    .string()
    .regex(/^[0-9]{1,9}$/)
    .transform(Number);
  queryTypes.add(schema, { type: "integer", minimum: min, maximum: max });
  return schema;
}

/** A snowflake id: a note's, a reaction's, a file's (paging cursors). */
export const querySnowflake = z.string();
queryTypes.add(querySnowflake, { type: "string", pattern: "^[0-9]{1,20}$" });
