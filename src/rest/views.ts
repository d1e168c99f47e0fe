// The documented snake_case shapes of notes and their parts (spec 2.4 to 2.7), written once for
// every route that returns notes.
import { type PublicAccount, qualifiedNameOf } from "../domain/accounts/service.ts";
import type { Context } from "../domain/context.ts";
import { fileUrl } from "../domain/drive/urls.ts";
import type { NoteView } from "../domain/notes/service.ts";
import type { Account, DriveFile } from "../generated/prisma/client.ts";

export function attachmentView(ctx: Context, f: DriveFile) {
  return {
    id: f.id.toString(),
    filename: f.name,
    content_type: f.mime,
    url: fileUrl(ctx.config, f.id),
    ...(f.blurhash ? { blur: f.blurhash } : {}),
    nsfw: f.nsfw,
  };
}

/** The short account of a notification's actor and of a follow request. */
export function accountSummaryView(ctx: Context, a: Account) {
  return {
    id: a.id.toString(),
    name: qualifiedNameOf(ctx, a),
    nickname: a.nickname,
    avatar: fileUrl(ctx.config, a.avatarFileId),
  };
}

export function authorView(ctx: Context, a: PublicAccount) {
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

/** A note; `full` adds its reactions and author (get, react, bookmark and timeline answers). */
export function noteView(ctx: Context, n: NoteView, full: boolean) {
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
    ...(full
      ? {
          reactions: n.reactions.map((r) => ({ emoji: r.emoji, reacted_by: r.accountId.toString() })),
          author: authorView(ctx, n.author),
        }
      : {}),
  };
}
