// The documented note and its parts (docs/notes.md#shape), written once for every route that
// returns notes.
import { z } from "zod";
import type { PublicAccount } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import type { NoteView } from "../../domain/notes/service.ts";
import { REACTIONS_SHOWN } from "../../domain/reactions/shown.ts";
import type { DriveFile, Reaction } from "../../generated/prisma/client.ts";
import { named, nested, Snowflake, Timestamp, Url, wireObject } from "../../http/views/wire.ts";
import { ACCOUNT } from "../../projection/account.ts";
import { DRIVE_FILE } from "../../projection/drive-file.ts";
import { viewerOf } from "../../projection/field.ts";
import { NOTE } from "../../projection/note.ts";
import { REACTION } from "../../projection/reaction.ts";

export const AttachmentShape = named(
  "Attachment",
  "A drive file attached to a note (see docs/notes.md#shape); `blur` only for images.",
  z.strictObject({
    id: Snowflake,
    filename: z.string(),
    content_type: z.string(),
    url: Url,
    blur: z.string().optional(),
    nsfw: z.boolean(),
  }),
);

export const ReactionShape = named(
  "Reaction",
  "One account's reaction (see docs/notes.md#reactions): a Unicode emoji or `<:alias:id>`.",
  z.strictObject({ emoji: z.string(), reacted_by: Snowflake }),
);

export const AuthorShape = named(
  "Author",
  "The author summary inside notes (see docs/notes.md#shape).",
  z.strictObject({
    id: Snowflake,
    name: z.string(),
    display_name: z.string(),
    bio: z.string(),
    avatar: Url,
    header: Url,
    followed_count: z.number().int(),
    following_count: z.number().int(),
  }),
);

const noteFields = {
  id: Snowflake,
  content: z.string(),
  cw_comment: z.string(),
  visibility: z.enum(["public", "home", "followers", "direct"]),
  send_to: Snowflake.optional().describe("the addressee; direct notes only"),
  created_at: Timestamp,
  attachment_files: z.array(AttachmentShape),
  renote_id: Snowflake.optional().describe("the renoted note; renotes and quotes only"),
  reply_to: Snowflake.optional().describe("the note replied to; replies only"),
};

export const NoteShape = named(
  "Note",
  "A note as create, renote and reply answer it (see docs/notes.md#shape).",
  z.strictObject(noteFields),
);

export const FullNoteShape = named(
  "FullNote",
  "A note with its reactions and author: get, react, bookmark, timelines, search (see docs/notes.md#shape).",
  z.strictObject({
    ...noteFields,
    reactions: z
      .array(ReactionShape)
      .max(REACTIONS_SHOWN)
      .describe(
        `at most ${REACTIONS_SHOWN}, the newest first, always with the caller's own (see docs/notes.md#bounded-reactions); GET /notes/{note_id}/reactions pages them all`,
      ),
    reaction_count: z.number().int().min(0).describe("extension: how many reactions the note has"),
    reaction_counts: z
      .record(z.string(), z.number().int().min(1))
      .describe("extension: how many of each emoji (an emoji nobody uses any more is absent)"),
    author: AuthorShape,
  }),
);

export const PagedReactionShape = named(
  "PagedReaction",
  "A reaction as GET /notes/{note_id}/reactions pages them (extension): with its id, which `before_id` takes.",
  z.strictObject({ id: Snowflake, emoji: z.string(), reacted_by: Snowflake, created_at: Timestamp }),
);

export const ATTACHMENT = wireObject<DriveFile, typeof AttachmentShape>(AttachmentShape, {
  id: DRIVE_FILE.id,
  filename: DRIVE_FILE.name,
  content_type: DRIVE_FILE.mime,
  url: DRIVE_FILE.url,
  blur: DRIVE_FILE.blur,
  nsfw: DRIVE_FILE.nsfw,
});

export const AUTHOR = wireObject<PublicAccount, typeof AuthorShape>(AuthorShape, {
  id: ACCOUNT.id,
  name: ACCOUNT.name,
  display_name: ACCOUNT.nickname,
  bio: ACCOUNT.bio,
  avatar: ACCOUNT.avatar,
  header: ACCOUNT.header,
  followed_count: ACCOUNT.followersCount,
  following_count: ACCOUNT.followingCount,
});

const SHOWN_REACTION = wireObject<Reaction, typeof ReactionShape>(ReactionShape, {
  emoji: REACTION.emoji,
  reacted_by: REACTION.reactedBy,
});

const noteMembers = {
  id: NOTE.id,
  content: NOTE.content,
  cw_comment: NOTE.cwComment,
  visibility: NOTE.visibility,
  send_to: NOTE.sendToId,
  created_at: NOTE.createdAt,
  attachment_files: nested(NOTE.attachments, ATTACHMENT),
  renote_id: NOTE.renoteId,
  reply_to: NOTE.replyToId,
};

export const NOTE_WIRE = wireObject<NoteView, typeof NoteShape>(NoteShape, noteMembers);

export const FULL_NOTE = wireObject<NoteView, typeof FullNoteShape>(FullNoteShape, {
  ...noteMembers,
  reactions: nested(NOTE.shownReactions, SHOWN_REACTION),
  reaction_count: NOTE.reactionCount,
  reaction_counts: NOTE.reactionCounts,
  author: nested(NOTE.author, AUTHOR),
});

export function noteView(ctx: Context, n: NoteView): z.infer<typeof NoteShape> {
  return NOTE_WIRE.view(n, viewerOf(ctx));
}

export function fullNoteView(ctx: Context, n: NoteView): z.infer<typeof FullNoteShape> {
  return FULL_NOTE.view(n, viewerOf(ctx));
}

const PAGED_REACTION = wireObject<Reaction, typeof PagedReactionShape>(PagedReactionShape, {
  id: REACTION.id,
  emoji: REACTION.emoji,
  reacted_by: REACTION.reactedBy,
  created_at: REACTION.createdAt,
});

export function pagedReactionView(ctx: Context, r: Reaction): z.infer<typeof PagedReactionShape> {
  return PAGED_REACTION.view(r, viewerOf(ctx));
}
