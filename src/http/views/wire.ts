// Wire shapes: each one `named` here is one schema of openapi.json (components.schemas), used by
// the view that builds it, by the route table and by the tests. Names live in zod's global
// registry, beside the descriptions of fields.
import { z } from "zod";

/** Names `schema` as the wire shape `id`. */
export function named<T extends z.ZodType>(id: string, description: string, schema: T): T {
  return schema.meta({ id, description });
}

/** A snowflake id as its decimal string (docs/http.md#ids). */
export const Snowflake = z.string().regex(/^[0-9]{1,20}$/);
/** ISO 8601 UTC with milliseconds (docs/http.md#timestamps). */
export const Timestamp = z.iso.datetime({ precision: 3 });
/** A URL, or "" where none is set (an unset avatar or header). */
export const Url = z.string();
