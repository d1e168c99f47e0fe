// The documented shapes the HTTP tests check answers against: the wire shapes of src/rest/views
// themselves (docs/notes.md#shape, docs/http.md#errors), and the formats of ids and timestamps.
import { expect } from "vitest";
import type { z } from "zod";

export {
  AccountCreatedShape,
  AccountSummaryShape,
  OwnAccountShape,
  PublicAccountShape,
} from "../../src/http/views/account.ts";
export { DriveFileShape } from "../../src/http/views/drive.ts";
export { FullNoteShape, NoteShape } from "../../src/rest/views/note.ts";
export { AnnouncementShape, NotificationShape } from "../../src/rest/views/notification.ts";

export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export const SNOWFLAKE = /^[1-9][0-9]{0,19}$/;

/**
 * `value` is exactly of `shape` (no member more, none missing), and of its optional members it
 * carries those in `present` and no other.
 */
export function expectShape(shape: z.ZodObject, value: unknown, present: string[] = []): void {
  shape.parse(value);
  const optional = Object.entries(shape.shape)
    .filter(([, member]) => (member as z.ZodType).safeParse(undefined).success)
    .map(([key]) => key);
  const carried = optional.filter((key) => key in (value as object));
  expect(carried.sort()).toEqual([...present].sort());
}
