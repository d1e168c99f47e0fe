// Notes (spec 4.3, 2.4; CONTRACT 5): create, renote (plain or quote), reply, get and delete.
import { foreignKeyViolation, type Prisma } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Account, DriveFile, Visibility } from "../../generated/prisma/client.ts";
import { recordSearchChange } from "../../search/outbox.ts";
import { checkStorable, codePoints } from "../accounts/rules.ts";
import { findAccount } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { DomainError, type ErrorCode } from "../errors.ts";
import { notify } from "../notifications/notify.ts";
import { optionalAccount, requireAccount, roleRank } from "../sessions/caller.ts";
import { isBlocking } from "../social/service.ts";
import { mentionedNameKeys } from "./mentions.ts";
import { visibleTo, visibleToEveryone } from "./visibility.ts";

export const LIMITS = { content: 3000, cwComment: 256, attachments: 16 } as const;
const VISIBILITIES: readonly string[] = ["public", "home", "followers", "direct"];

/** What a note shows: its author, reactions and attachments, loaded in a fixed number of queries. */
export const NOTE_INCLUDE = {
  author: true,
  reactions: { orderBy: { createdAt: "asc" } },
  attachments: { orderBy: { position: "asc" }, include: { file: true } },
} satisfies Prisma.NoteInclude;

export type NoteView = Prisma.NoteGetPayload<{ include: typeof NOTE_INCLUDE }>;

export interface NoteInput {
  content?: string;
  visibility?: string;
  attachmentFileIds?: string[];
  cwComment?: string;
  sendTo?: string;
}

interface Checked {
  content: string;
  cwComment: string;
  visibility: Visibility;
  /** The attached drive files, in order. */
  files: DriveFile[];
  sendTo?: Account;
}

interface Rules {
  /** The code the operation uses for lengths: TOO_MANY_CONTENT on create, else TOO_MANY_CHAR_LENGTH. */
  tooLong: ErrorCode;
  /** A plain renote has no content; other notes need content or an attachment. */
  allowEmpty: boolean;
}

/** The field rules of a new note. */
async function checkNoteInput(ctx: Context, author: Account, input: NoteInput, rules: Rules): Promise<Checked> {
  const visibility = input.visibility ?? "public";
  if (!VISIBILITIES.includes(visibility)) throw new DomainError("INVALID_VISIBILITY");
  const content = input.content ?? "";
  const cwComment = input.cwComment ?? "";
  checkStorable(content, cwComment);
  if (codePoints(content) > LIMITS.content || codePoints(cwComment) > LIMITS.cwComment) {
    throw new DomainError(rules.tooLong);
  }
  const ids = input.attachmentFileIds ?? [];
  if (ids.length > LIMITS.attachments) throw new DomainError("TOO_MANY_ATTACHMENTS");
  if (visibility === "direct" && !input.sendTo) throw new DomainError("NO_DESTINATION");
  if (visibility !== "direct" && input.sendTo !== undefined) throw new DomainError("INVALID_REQUEST");
  if (content.trim() === "" && ids.length === 0 && !rules.allowEmpty) throw new DomainError("INVALID_REQUEST");
  if (author.silenced && visibility === "public") throw new DomainError("YOU_ARE_SILENCED");
  const sendTo = input.sendTo === undefined ? undefined : await findAccount(ctx, input.sendTo);
  const fileIds = ids.map((id) => parseSnowflake(id));
  if (fileIds.some((id) => id === undefined) || new Set(fileIds).size !== fileIds.length) {
    throw new DomainError("ATTACHMENT_NOT_FOUND");
  }
  const owned = fileIds.length
    ? await ctx.db.driveFile.findMany({ where: { id: { in: fileIds as bigint[] }, ownerId: author.id } })
    : [];
  if (owned.length !== fileIds.length) throw new DomainError("ATTACHMENT_NOT_FOUND");
  const byId = new Map(owned.map((f) => [f.id, f]));
  const files = (fileIds as bigint[]).map((id) => byId.get(id) as DriveFile);
  return { content, cwComment, visibility: visibility as Visibility, files, sendTo };
}

interface Links {
  renoteId?: bigint;
  replyToId?: bigint;
  /** More to write in the note's transaction (the renoted notification). */
  also?: (tx: Prisma.TransactionClient) => Promise<void>;
}

/** Writes a note with its attachments, counter and notifications in one transaction. */
async function writeNote(ctx: Context, author: Account, checked: Checked, links: Links): Promise<NoteView> {
  const mentionedKeys = checked.content ? mentionedNameKeys(checked.content, ctx.config.localHost) : [];
  const mentioned = mentionedKeys.length
    ? await ctx.db.account.findMany({ where: { nameKey: { in: mentionedKeys } } })
    : [];
  return ctx.db.$transaction(writeNoteIn).catch((err) => {
    // What the note refers to was deleted since it was read: an attached file, or the note renoted
    // or replied to.
    const gone = foreignKeyViolation(err);
    if (gone) throw new DomainError(gone.constraint.includes("file") ? "ATTACHMENT_NOT_FOUND" : "NOTE_NOT_FOUND");
    throw err;
  });

  async function writeNoteIn(tx: Prisma.TransactionClient): Promise<NoteView> {
    const created = await tx.note.create({
      data: {
        id: ctx.ids.next(),
        authorId: author.id,
        content: checked.content,
        cwComment: checked.cwComment,
        visibility: checked.visibility,
        sendToId: checked.sendTo?.id,
        renoteId: links.renoteId,
        replyToId: links.replyToId,
        attachments: { create: checked.files.map((file, position) => ({ fileId: file.id, position })) },
      },
    });
    // Its author and files are known and it has no reactions yet: no need to read it back.
    const note: NoteView = {
      ...created,
      author,
      reactions: [],
      attachments: checked.files.map((file, position) => ({ noteId: created.id, fileId: file.id, position, file })),
    };
    for (const account of mentioned) {
      // Only those who may see the note hear of it.
      const seen =
        visibleToEveryone(note.visibility) ||
        (await tx.note.count({ where: { id: note.id, ...visibleTo(account) } })) > 0;
      if (seen)
        await notify(ctx, tx, { recipientId: account.id, actorId: author.id, type: "mentioned", noteId: note.id });
    }
    await links.also?.(tx);
    await recordSearchChange(ctx, tx, "upsert", [note.id]);
    // Last, so the author's row is locked only until the commit that follows: concurrent notes
    // by one author queue on it for a moment, not for the whole transaction.
    await tx.account.update({ where: { id: author.id }, data: { notesCount: { increment: 1 } } });
    return note;
  }
}

export async function createNote(ctx: Context, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CONTENT", allowEmpty: false });
  return writeNote(ctx, author, checked, {});
}

/** A note the caller may see; NOTE_NOT_FOUND otherwise (also when it exists). */
export async function findVisibleNote(ctx: Context, noteId: string): Promise<NoteView> {
  const viewer = optionalAccount(ctx);
  const id = parseSnowflake(noteId);
  const note =
    id === undefined
      ? null
      : await ctx.db.note.findFirst({ where: { id, ...visibleTo(viewer) }, include: NOTE_INCLUDE });
  if (!note) throw new DomainError("NOTE_NOT_FOUND");
  return note;
}

export const getNote = findVisibleNote;

/** Renote: empty content makes a plain renote, content a quote. Only public and home notes. */
export async function renote(ctx: Context, noteId: string, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const original = await findVisibleNote(ctx, noteId);
  if (original.visibility !== "public" && original.visibility !== "home") throw new DomainError("NO_PERMISSION");
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CHAR_LENGTH", allowEmpty: true });
  return writeNote(ctx, author, checked, {
    renoteId: original.id,
    also: (tx) =>
      notify(ctx, tx, {
        recipientId: original.authorId,
        actorId: author.id,
        type: "renoted",
        noteId: original.id,
        content: original.cwComment ? "" : original.content,
      }),
  });
}

export async function reply(ctx: Context, noteId: string, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const original = await findVisibleNote(ctx, noteId);
  if (await isBlocking(ctx.db, original.authorId, author.id)) throw new DomainError("YOU_ARE_BLOCKED");
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CHAR_LENGTH", allowEmpty: false });
  return writeNote(ctx, author, checked, { replyToId: original.id });
}

/** A plain renote: a renote with no content of its own and nothing attached; any other is a quote. */
export const PLAIN_RENOTE = {
  renoteId: { not: null },
  content: "",
  attachments: { none: {} },
} satisfies Prisma.NoteWhereInput;

export const QUOTE = {
  renoteId: { not: null },
  NOT: { content: "", attachments: { none: {} } },
} satisfies Prisma.NoteWhereInput;

/** Deletes a note (its author, or a moderator): its plain renotes, reactions and bookmarks go too. */
export async function deleteNote(ctx: Context, noteId: string): Promise<void> {
  const caller = requireAccount(ctx);
  const moderator = roleRank(caller) >= 1;
  const id = parseSnowflake(noteId);
  // Moderators may delete any note, also one they could not see.
  const note =
    id === undefined ? null : await ctx.db.note.findFirst({ where: { id, ...(moderator ? {} : visibleTo(caller)) } });
  if (!note) throw new DomainError("NOTE_NOT_FOUND");
  if (note.authorId !== caller.id && !moderator) throw new DomainError("NO_PERMISSION");
  await ctx.db.$transaction(async (tx) => {
    // Locked first: a concurrent deletion waits here and then finds nothing (NOTE_NOT_FOUND); a
    // renote being written commits before this lock is granted, so it is seen below, and one
    // written after waits for the deletion and fails (NOTE_NOT_FOUND).
    const locked = await tx.$queryRaw<{ id: bigint }[]>`SELECT id FROM notes WHERE id = ${note.id} FOR UPDATE`;
    if (locked.length === 0) throw new DomainError("NOTE_NOT_FOUND");
    const plainRenotes = await tx.note.findMany({
      where: { ...PLAIN_RENOTE, renoteId: note.id },
      select: { id: true, authorId: true },
    });
    const gone = [note, ...plainRenotes].map((n) => n.id);
    // Each author's counter drops by the notes of theirs that go: one statement, however many.
    await tx.$executeRaw`
      UPDATE accounts a SET notes_count = a.notes_count - g.n
      FROM (SELECT author_id, count(*)::int AS n FROM notes WHERE id = ANY(${gone}) GROUP BY author_id) g
      WHERE a.id = g.author_id`;
    await tx.note.deleteMany({ where: { id: { in: gone } } });
    await recordSearchChange(ctx, tx, "remove", gone);
  });
}
