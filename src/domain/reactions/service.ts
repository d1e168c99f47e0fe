// Reactions (spec 3.4, 4.3): one per account per note, enforced by the database.
import { foreignKeyViolation, uniqueViolation } from "../../db/client.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { findVisibleNote, NOTE_INCLUDE, type NoteView } from "../notes/service.ts";
import { notify } from "../notifications/notify.ts";
import { requireAccount } from "../sessions/caller.ts";
import { isBlocking } from "../social/service.ts";
import { checkReactionEmoji } from "./emoji.ts";

export async function react(ctx: Context, noteId: string, emojiText: string): Promise<NoteView> {
  const caller = requireAccount(ctx);
  const emoji = await checkReactionEmoji(ctx, emojiText);
  const note = await findVisibleNote(ctx, noteId);
  if (await isBlocking(ctx.db, note.authorId, caller.id)) throw new DomainError("YOU_ARE_BLOCKED");
  try {
    return await ctx.db.$transaction(async (tx) => {
      await tx.reaction.create({ data: { noteId: note.id, accountId: caller.id, emoji } });
      await notify(ctx, tx, {
        recipientId: note.authorId,
        actorId: caller.id,
        type: "reacted",
        noteId: note.id,
        content: emoji,
      });
      return tx.note.findUniqueOrThrow({ where: { id: note.id }, include: NOTE_INCLUDE });
    });
  } catch (err) {
    if (uniqueViolation(err)) throw new DomainError("ALREADY_REACTED");
    if (foreignKeyViolation(err)) throw new DomainError("NOTE_NOT_FOUND"); // deleted meanwhile
    throw err;
  }
}

export async function unreact(ctx: Context, noteId: string): Promise<void> {
  const caller = requireAccount(ctx);
  const note = await findVisibleNote(ctx, noteId);
  const { count } = await ctx.db.reaction.deleteMany({ where: { noteId: note.id, accountId: caller.id } });
  if (count === 0) throw new DomainError("NOT_REACTED");
}
