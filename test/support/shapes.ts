// The documented shapes the HTTP tests check answers against (spec 2.4 to 2.7, CONTRACT 2).
export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export const SNOWFLAKE = /^[1-9][0-9]{0,19}$/;
/** A note as create, renote and reply answer it (sorted). */
export const NOTE_KEYS = ["attachment_files", "content", "created_at", "cw_comment", "id", "visibility"];
/** A note with its reactions and author: get, react, bookmark, timelines, search (sorted). */
export const FULL_NOTE_KEYS = [...NOTE_KEYS, "author", "reactions"].sort();
/** The author summary inside notes (sorted). */
export const AUTHOR_KEYS = [
  "avatar",
  "bio",
  "display_name",
  "followed_count",
  "following_count",
  "header",
  "id",
  "name",
];
