// The registry of wire shapes: every shape registered here is one named schema of openapi.json
// (components.schemas), used by the view that builds it, by the route table and by the tests.
import { z } from "zod";

export const wire = z.registry<{ id: string; description?: string }>();

/** Registers `schema` as the wire shape `id`. */
export function named<T extends z.ZodType>(id: string, description: string, schema: T): T {
  wire.add(schema, { id, description });
  return schema;
}

/** A snowflake id as its decimal string (CONTRACT 3). */
export const Snowflake = z.string().regex(/^[0-9]{1,20}$/);
/** ISO 8601 UTC with milliseconds (CONTRACT 2). */
export const Timestamp = z.iso.datetime({ precision: 3 });
/** A URL, or "" where none is set (an unset avatar or header). */
export const Url = z.string();
