// Notes (docs/notes.md): create, renote (plain or quote), reply, get and delete.

import { SqlTemplate, standIn } from "../../db/built-sql.ts";
import { foreignKeyViolation, Prisma } from "../../db/client.ts";
import { oneOf } from "../../db/one-of.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Account, DriveFile, Note, Visibility } from "../../generated/prisma/client.ts";
import { checkStorable, codePoints } from "../accounts/rules.ts";
import { findPublicAccount, type PublicAccount, publicColumnsOf } from "../accounts/service.ts";
import type { Context, Services } from "../context.ts";
import { DomainError, type ErrorCode } from "../errors.ts";
import { wakeLiveHubs } from "../live/wake.ts";
import { type NotificationInput, notify } from "../notifications/notify.ts";
import { recordSearchChange } from "../search/outbox.ts";
import { isModerator, optionalAccount, requireAccount } from "../sessions/caller.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";
import { isBlocking } from "../social/service.ts";
import { noteOutboxRow, noteOutboxSql, remoteReaders, storedRemoteReaders, unannouncedSql } from "./federation.ts";
import { insertNote, type NewNote, type Written } from "./insert.ts";
import { type NoteLoader, type NoteView, notesSelectedBy, noteViews } from "./load.ts";
import { mentionedNameKeys } from "./mentions.ts";
import { audienceSql, unfrozenSql, visibleTo, visibleToEveryone } from "./visibility.ts";

export const LIMITS = { content: 3000, cwComment: 256, attachments: 16 } as const;
const VISIBILITIES: readonly string[] = ["public", "home", "followers", "direct"];

export type { NoteView } from "./load.ts";

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
  sendTo?: PublicAccount;
}

interface Rules {
  /** The code the operation uses for lengths: TOO_MANY_CONTENT on create, else TOO_MANY_CHAR_LENGTH. */
  tooLong: ErrorCode;
  /** A plain renote has no content; other notes need content or an attachment. */
  allowEmpty: boolean;
}

/** The field rules of a new note. */
async function checkNoteInput(ctx: Context, author: CallerAccount, input: NoteInput, rules: Rules): Promise<Checked> {
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
  const sendTo = input.sendTo === undefined ? undefined : await findPublicAccount(ctx, input.sendTo);
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
  /** Notifications the note causes besides its mentions (the renoted one). */
  notices?: NotificationInput[];
  /** The author of the note renoted or replied to: another server's is sent the note. */
  about?: { id: bigint; host: string | null };
}

/**
 * Writes a note with its attachments, notifications, search outbox entry and the author's
 * counter, all or nothing. A note everyone may see, or one that mentions nobody, is one SQL
 * statement (insertNote: with others posted meanwhile), which also finds the mentioned accounts;
 * only a followers-only or direct note that mentions someone needs a transaction, for the
 * visibility rule decides, once the note exists, which mentioned accounts hear of it.
 */
async function writeNote(ctx: Context, author: CallerAccount, checked: Checked, links: Links): Promise<NoteView> {
  const mentionedKeys = checked.content ? mentionedNameKeys(checked.content, ctx.config.localHost) : [];
  const row = {
    id: ctx.ids.next(),
    authorId: author.id,
    content: checked.content,
    cwComment: checked.cwComment,
    visibility: checked.visibility,
    sendToId: checked.sendTo?.id ?? null,
    renoteId: links.renoteId ?? null,
    replyToId: links.replyToId ?? null,
    // A local note: its id is this server's (docs/federation.md#notes).
    uri: null,
    url: null,
    editedAt: null,
  };
  const mention = (account: Account): NotificationInput => ({
    recipientId: account.id,
    actorId: author.id,
    type: "mentioned",
    noteId: row.id,
  });
  const inOneStatement = visibleToEveryone(row.visibility) || mentionedKeys.length === 0;
  const note: NewNote = {
    row,
    fileIds: checked.files.map((f) => f.id),
    notices: (links.notices ?? []).map((n) => ({ ...n, id: ctx.ids.next() })),
    mentions: inOneStatement ? mentionedKeys.map((key) => ({ key, noticeId: ctx.ids.next() })) : [],
    // Written by the note's own statement: sent once it commits, never lost to a process dying after.
    federated: noteOutboxRow(
      ctx,
      {
        ...row,
        plainRenote: isPlainRenote(row, checked.files.length),
        remoteSendToId: checked.sendTo?.host ? checked.sendTo.id : null,
        remoteReaders: await remoteReaders(ctx, row.content, row.visibility, links.about),
      },
      "create",
    ),
  };
  let written: Written | undefined;
  try {
    if (inOneStatement) {
      written = await insertNote(ctx, note);
    } else {
      const mentioned = await ctx.db.account.findMany({ where: { nameKey: { in: mentionedKeys }, deletedAt: null } });
      written = await ctx.db.$transaction(async (tx) => {
        const at = await insertNote(ctx, note, tx);
        for (const account of mentioned) {
          // Only those who may see the note hear of it.
          if (await tx.note.count({ where: { id: row.id, ...visibleTo(account) } })) {
            await notify(ctx, tx, mention(account));
          }
        }
        return at;
      });
    }
  } catch (err) {
    // What the note refers to was deleted since it was read: an attached file, or the note
    // renoted or replied to.
    // node-postgres' errors (the statement outside a transaction) are PostgreSQL's own.
    const pgError = err as { code?: string; constraint?: string };
    const gone =
      foreignKeyViolation(err) ?? (pgError.code === "23503" ? { constraint: `${pgError.constraint}` } : undefined);
    if (gone) throw new DomainError(gone.constraint.includes("file") ? "ATTACHMENT_NOT_FOUND" : "NOTE_NOT_FOUND");
    // The author deleted since its token was read (refuse_deleted_author), as accountGone says it of Prisma's.
    if (pgError.code === "MU404") throw new DomainError("ACCOUNT_NOT_FOUND");
    throw err;
  }
  if (!written) throw new DomainError("ACCOUNT_NOT_FOUND");
  // Its journal rows were written without a NOTIFY (WAKES_LIVE_SQL): committed now, it wakes the hubs.
  wakeLiveHubs(ctx.db, ctx.log);
  // Its author and files are known and it has no reactions yet: no need to read it back.
  const { createdAt, ...counters } = written;
  return {
    ...row,
    createdAt,
    author: publicColumnsOf({ ...author, ...counters }),
    reactions: [],
    ownReaction: null,
    reactionCounts: {},
    attachments: checked.files.map((file, position) => ({ noteId: row.id, fileId: file.id, position, file })),
  };
}

export async function createNote(ctx: Context, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CONTENT", allowEmpty: false });
  return writeNote(ctx, author, checked, {});
}

/** A note the caller may see; NOTE_NOT_FOUND otherwise (also when it exists). */
export function findVisibleNote(ctx: Context, noteId: string): Promise<NoteView> {
  return getNote(ctx, noteId, notesSelectedBy);
}

/**
 * The note `noteId` as `load` shows it to the caller (by default a NoteView; REST's FullNote
 * written by PostgreSQL), or NOTE_NOT_FOUND: the visibility rule in its SQL form
 * (./visibility.ts), in the one statement that loads the note. A Prisma lookup and then its
 * reactions' had been two round trips and most of the request's CPU (bench/README.md, get note).
 */
export async function getNote<T = NoteView>(ctx: Context, noteId: string, load: NoteLoader<T> = noteViews): Promise<T> {
  const id = parseSnowflake(noteId);
  if (id === undefined) throw new DomainError("NOTE_NOT_FOUND");
  const [note] = await load(ctx, visibleNoteById(ctx, id));
  if (note === undefined) throw new DomainError("NOTE_NOT_FOUND");
  return note;
}

/** The notes `n` for which `where` holds that the caller may see, as a page statement for a loader. */
export function visibleNotes(ctx: Context, where: Prisma.Sql): Prisma.Sql {
  return visibleNotesOf(optionalAccount(ctx), where);
}

function visibleNotesOf(viewer: CallerAccount | undefined, where: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`SELECT n.* FROM notes n JOIN accounts author ON author.id = n.author_id
    WHERE ${where} AND ${audienceSql(viewer)} ${unfrozenSql(viewer, Prisma.raw("author"))}`;
}

const NOTE_ID = standIn("note id");
const VIEWER_ID = standIn("viewer id");
/** visibleNoteById's templates: for no viewer, an account, a moderator. */
const byIdPages: SqlTemplate[] = [];

/**
 * visibleNotes(ctx, `n.id = id`), whose text depends only on whether there is a viewer and whether
 * it is a moderator: built once for each, get note's page puts its note's and viewer's ids in
 * (test/unit/built-sql.test.ts holds it equal to visibleNotes).
 */
export function visibleNoteById(ctx: Context, id: bigint): Prisma.Sql {
  const viewer = optionalAccount(ctx);
  const kind = viewer === undefined ? 0 : isModerator(viewer) ? 2 : 1;
  let template = byIdPages[kind];
  if (template === undefined) {
    const standing = viewer && { ...viewer, id: VIEWER_ID };
    template = new SqlTemplate(visibleNotesOf(standing, Prisma.sql`n.id = ${NOTE_ID}`), [NOTE_ID, VIEWER_ID]);
    byIdPages[kind] = template;
  }
  return template.with([id, viewer?.id]);
}

/** The notes of `ids` the caller may see, in one query: each id's note, or null. */
export async function visibleNotesByIds(ctx: Context, ids: readonly bigint[]): Promise<(NoteView | null)[]> {
  // A few ids as a list (src/db/one-of.ts): as an array, the statement of GraphQL's renote and
  // reply loaders was planned anew at every page (1.06 ms of planning against 0.14 to run).
  const found = await notesSelectedBy(ctx, visibleNotes(ctx, oneOf(Prisma.sql`n.id`, [...new Set(ids)], "bigint")));
  const byId = new Map(found.map((note) => [note.id, note]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** Renote: empty content makes a plain renote, content a quote. Only public and home notes. */
export async function renote(ctx: Context, noteId: string, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const original = await findVisibleNote(ctx, noteId);
  if (original.visibility !== "public" && original.visibility !== "home") throw new DomainError("NO_PERMISSION");
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CHAR_LENGTH", allowEmpty: true });
  return writeNote(ctx, author, checked, {
    renoteId: original.id,
    about: { id: original.authorId, host: original.author.host },
    notices: [
      {
        recipientId: original.authorId,
        actorId: author.id,
        type: "renoted",
        noteId: original.id,
        content: original.cwComment ? "" : original.content,
      },
    ],
  });
}

export async function reply(ctx: Context, noteId: string, input: NoteInput): Promise<NoteView> {
  const author = requireAccount(ctx);
  const original = await findVisibleNote(ctx, noteId);
  if (await isBlocking(ctx.db, original.authorId, author.id)) throw new DomainError("YOU_ARE_BLOCKED");
  const checked = await checkNoteInput(ctx, author, input, { tooLong: "TOO_MANY_CHAR_LENGTH", allowEmpty: false });
  return writeNote(ctx, author, checked, {
    replyToId: original.id,
    about: { id: original.authorId, host: original.author.host },
  });
}

/** A plain renote: a renote with no content of its own and nothing attached; any other is a quote. */
export const PLAIN_RENOTE = {
  renoteId: { not: null },
  content: "",
  attachments: { none: {} },
} satisfies Prisma.NoteWhereInput;

/** PLAIN_RENOTE of a note in hand, given how many files it has attached. */
export function isPlainRenote(note: Pick<Note, "renoteId" | "content">, attachments: number): boolean {
  return note.renoteId !== null && note.content === "" && attachments === 0;
}

export const QUOTE = {
  renoteId: { not: null },
  NOT: { content: "", attachments: { none: {} } },
} satisfies Prisma.NoteWhereInput;

/**
 * Notes `gone` deleted in `tx` (a note and its plain renotes, locally or by their remote author):
 * each author's counter drops by the notes of theirs among them, in one statement however many,
 * and the search index forgets them.
 */
export async function removeNotes(services: Services, tx: Prisma.TransactionClient, gone: bigint[]): Promise<void> {
  await tx.$executeRaw`
    UPDATE accounts a SET notes_count = a.notes_count - g.n
    FROM (SELECT author_id, count(*)::int AS n FROM notes WHERE id = ANY(${gone}) GROUP BY author_id) g
    WHERE a.id = g.author_id`;
  await tx.note.deleteMany({ where: { id: { in: gone } } });
  await recordSearchChange(services, tx, "remove", gone);
}

/** Deletes a note (its author, or a moderator): its plain renotes, reactions and bookmarks go too. */
export async function deleteNote(ctx: Context, noteId: string): Promise<void> {
  const caller = requireAccount(ctx);
  const moderator = isModerator(caller);
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
    // Read before its attachments go with it: a plain renote's withdrawal is Undo(Announce).
    const plainRenote = isPlainRenote(note, await tx.noteAttachment.count({ where: { noteId: note.id } }));
    const plainRenotes = await tx.note.findMany({
      where: { ...PLAIN_RENOTE, renoteId: note.id },
      select: { id: true, authorId: true, visibility: true },
    });
    await removeNotes(
      ctx,
      tx,
      [note, ...plainRenotes].map((n) => n.id),
    );
    const sendTo = note.sendToId === null ? null : await tx.account.findUnique({ where: { id: note.sendToId } });
    const federated = noteOutboxRow(
      ctx,
      {
        ...note,
        plainRenote,
        remoteSendToId: sendTo?.host ? sendTo.id : null,
        remoteReaders: await storedRemoteReaders(ctx, tx, note),
      },
      "delete",
    );
    if (federated) await tx.$executeRaw(noteOutboxSql(federated));
    const unannounced = unannouncedSql(ctx, plainRenotes);
    if (unannounced) await tx.$executeRaw(unannounced);
  });
}
