// The documented note and its parts (docs/notes.md#shape), written once for every route that
// returns notes.
import { z } from "zod";
import { type PublicAccount, qualifiedNameOf } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import { fileUrl } from "../../domain/drive/urls.ts";
import type { NoteView } from "../../domain/notes/service.ts";
import { REACTIONS_SHOWN, reactionTotal, shownReactions } from "../../domain/reactions/shown.ts";
import type { DriveFile, Reaction } from "../../generated/prisma/client.ts";
import { named, Snowflake, Timestamp, Url } from "../../http/views/wire.ts";

export const AttachmentShape = named(
  "Attachment",
  "A drive file attached to a note (spec 2.5); `blur` only for images.",
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
  "One account's reaction (spec 2.6): a Unicode emoji or `<:alias:id>`.",
  z.strictObject({ emoji: z.string(), reacted_by: Snowflake }),
);

export const AuthorShape = named(
  "Author",
  "The author summary inside notes (spec 2.7).",
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
  "A note as create, renote and reply answer it (spec 2.4).",
  z.strictObject(noteFields),
);

export const FullNoteShape = named(
  "FullNote",
  "A note with its reactions and author: get, react, bookmark, timelines, search (spec 2.4).",
  z.strictObject({
    ...noteFields,
    reactions: z
      .array(ReactionShape)
      .max(REACTIONS_SHOWN)
      .describe(
        `at most ${REACTIONS_SHOWN}, the newest first, always with the caller's own (CONTRACT 5); GET /notes/{note_id}/reactions pages them all`,
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

export function attachmentView(ctx: Context, f: DriveFile): z.infer<typeof AttachmentShape> {
  return {
    id: f.id.toString(),
    filename: f.name,
    content_type: f.mime,
    url: fileUrl(ctx.config, f.id),
    ...(f.blurhash ? { blur: f.blurhash } : {}),
    nsfw: f.nsfw,
  };
}

export function authorView(ctx: Context, a: PublicAccount): z.infer<typeof AuthorShape> {
  return {
    id: a.id.toString(),
    name: qualifiedNameOf(ctx, a),
    display_name: a.nickname,
    bio: a.bio,
    avatar: fileUrl(ctx.config, a.avatarFileId),
    header: fileUrl(ctx.config, a.headerFileId),
    followed_count: a.followersCount,
    following_count: a.followingCount,
  };
}

export function noteView(ctx: Context, n: NoteView): z.infer<typeof NoteShape> {
  return {
    id: n.id.toString(),
    content: n.content,
    cw_comment: n.cwComment,
    visibility: n.visibility,
    ...(n.sendToId === null ? {} : { send_to: n.sendToId.toString() }),
    created_at: n.createdAt.toISOString(),
    attachment_files: n.attachments.map((a) => attachmentView(ctx, a.file)),
    ...(n.renoteId === null ? {} : { renote_id: n.renoteId.toString() }),
    ...(n.replyToId === null ? {} : { reply_to: n.replyToId.toString() }),
  };
}

export function fullNoteView(ctx: Context, n: NoteView): z.infer<typeof FullNoteShape> {
  return {
    ...noteView(ctx, n),
    reactions: shownReactions(n).map((r) => ({ emoji: r.emoji, reacted_by: r.accountId.toString() })),
    reaction_count: reactionTotal(n),
    reaction_counts: n.reactionCounts,
    author: authorView(ctx, n.author),
  };
}

export function pagedReactionView(r: Reaction): z.infer<typeof PagedReactionShape> {
  return {
    id: r.id.toString(),
    emoji: r.emoji,
    reacted_by: r.accountId.toString(),
    created_at: r.createdAt.toISOString(),
  };
}
