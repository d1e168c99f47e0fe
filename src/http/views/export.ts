// The documented export of an account (docs/accounts.md#export) and its view: written as a stream,
// one page of rows at a time (REST), or built whole (GraphQL's exportAccount).
import { z } from "zod";
import type {
  AccountExport,
  AccountSummary,
  ExportedList,
  ExportedNote,
  ExportedRelation,
} from "../../domain/accounts/export.ts";
import type { Context } from "../../domain/context.ts";
import type { Account, Bookmark, DriveFile, Reaction } from "../../generated/prisma/client.ts";
import { ACCOUNT } from "../../projection/account.ts";
import { DRIVE_FILE } from "../../projection/drive-file.ts";
import { viewerOf } from "../../projection/field.ts";
import { NOTE } from "../../projection/note.ts";
import { AccountSummaryShape, accountSummaryView } from "./account.ts";
import { DRIVE_FILE_WIRE, DriveFileShape } from "./drive.ts";
import { named, Snowflake, Timestamp, Url, wireObject } from "./wire.ts";

export const ExportedProfileShape = named(
  "ExportedProfile",
  "The exported account itself, as its owner sees it.",
  z.strictObject({
    id: Snowflake,
    name: z.string(),
    nickname: z.string(),
    bio: z.string(),
    email: z.string(),
    avatar: Url,
    header: Url,
    locked: z.boolean(),
    verified: z.boolean(),
    role: z.enum(["normal", "moderator", "admin"]),
    followed_count: z.number().int(),
    following_count: z.number().int(),
    note_count: z.number().int(),
    created_at: Timestamp,
  }),
);

export const ExportedNoteShape = named(
  "ExportedNote",
  "One of the account's notes, as stored: ids of what it links to, which may since be gone.",
  z.strictObject({
    id: Snowflake,
    content: z.string(),
    cw_comment: z.string(),
    visibility: z.enum(["public", "home", "followers", "direct"]),
    send_to: Snowflake.optional().describe("the addressee; direct notes only"),
    renote_id: Snowflake.optional().describe("the renoted note; renotes and quotes only"),
    reply_to: Snowflake.optional().describe("the note replied to; replies only"),
    attachment_ids: z.array(Snowflake).describe("its drive files, in order"),
    created_at: Timestamp,
  }),
);

export const ExportedRelationShape = named(
  "ExportedRelation",
  "An account followed, following or blocked, and since when.",
  z.strictObject({ account: AccountSummaryShape, created_at: Timestamp }),
);

export const ExportedListShape = named(
  "ExportedList",
  "One of the account's lists with its assignees.",
  z.strictObject({
    id: Snowflake,
    title: z.string(),
    public: z.boolean(),
    assignees: z.array(AccountSummaryShape),
    created_at: Timestamp,
  }),
);

export const ExportedNoteRefShape = named(
  "ExportedNoteRef",
  "A note the account bookmarked, and when.",
  z.strictObject({ note_id: Snowflake, created_at: Timestamp }),
);

export const ExportedReactionShape = named(
  "ExportedReaction",
  "A reaction the account gave.",
  z.strictObject({ note_id: Snowflake, emoji: z.string(), created_at: Timestamp }),
);

export const ExportedDriveFileShape = named(
  "ExportedDriveFile",
  "A drive file with its URL, size and upload time.",
  z.strictObject({ ...DriveFileShape.shape, size: z.number().int(), created_at: Timestamp }),
);

export const AccountExportShape = named(
  "AccountExport",
  "Everything an account holds, each list in key order (see docs/accounts.md#export).",
  z.strictObject({
    exported_at: Timestamp,
    profile: ExportedProfileShape,
    notes: z.array(ExportedNoteShape),
    bookmarks: z.array(ExportedNoteRefShape),
    follows: z.array(ExportedRelationShape).describe("accounts it follows"),
    followers: z.array(ExportedRelationShape).describe("accounts following it"),
    blocks: z.array(ExportedRelationShape).describe("accounts it blocks"),
    mutes: z.array(ExportedRelationShape).describe("accounts it mutes"),
    lists: z.array(ExportedListShape),
    reactions: z.array(ExportedReactionShape),
    drive_files: z.array(ExportedDriveFileShape),
  }),
);

export type AccountExportDocument = z.infer<typeof AccountExportShape>;

const summary = (ctx: Context, a: AccountSummary) => accountSummaryView(ctx, a);

const EXPORTED_NOTE = wireObject<ExportedNote, typeof ExportedNoteShape>(ExportedNoteShape, {
  id: NOTE.id,
  content: NOTE.content,
  cw_comment: NOTE.cwComment,
  visibility: NOTE.visibility,
  send_to: NOTE.sendToId,
  renote_id: NOTE.renoteId,
  reply_to: NOTE.replyToId,
  attachment_ids: NOTE.attachmentIds,
  created_at: NOTE.createdAt,
});

const EXPORTED_DRIVE_FILE = wireObject<DriveFile, typeof ExportedDriveFileShape>(ExportedDriveFileShape, {
  ...DRIVE_FILE_WIRE.members,
  size: DRIVE_FILE.size,
  created_at: DRIVE_FILE.createdAt,
});

const PROFILE = wireObject<Account, typeof ExportedProfileShape>(ExportedProfileShape, {
  id: ACCOUNT.id,
  name: ACCOUNT.name,
  nickname: ACCOUNT.nickname,
  bio: ACCOUNT.bio,
  email: ACCOUNT.email,
  avatar: ACCOUNT.avatar,
  header: ACCOUNT.header,
  locked: ACCOUNT.locked,
  verified: ACCOUNT.verified,
  role: ACCOUNT.role,
  followed_count: ACCOUNT.followersCount,
  following_count: ACCOUNT.followingCount,
  note_count: ACCOUNT.notesCount,
  created_at: ACCOUNT.createdAt,
});

const relationView = (ctx: Context, r: ExportedRelation): z.infer<typeof ExportedRelationShape> => ({
  account: summary(ctx, r.account),
  created_at: r.createdAt.toISOString(),
});

/** The sections of the document after the profile, in order, each with the view of its rows. */
function sections(ctx: Context, exp: AccountExport): [string, AsyncIterable<unknown>, (row: never) => unknown][] {
  const viewer = viewerOf(ctx);
  const section = <T>(name: string, rows: AsyncIterable<T>, view: (row: T) => unknown) =>
    [name, rows, view] as [string, AsyncIterable<unknown>, (row: never) => unknown];
  return [
    section("notes", exp.notes, (n: ExportedNote) => EXPORTED_NOTE.view(n, viewer)),
    section("bookmarks", exp.bookmarks, (b: Bookmark) => ({
      note_id: b.noteId.toString(),
      created_at: b.createdAt.toISOString(),
    })),
    section("follows", exp.follows, (r: ExportedRelation) => relationView(ctx, r)),
    section("followers", exp.followers, (r: ExportedRelation) => relationView(ctx, r)),
    section("blocks", exp.blocks, (r: ExportedRelation) => relationView(ctx, r)),
    section("mutes", exp.mutes, (r: ExportedRelation) => relationView(ctx, r)),
    section("lists", exp.lists, (l: ExportedList) => ({
      id: l.id.toString(),
      title: l.title,
      public: l.public,
      assignees: l.assignees.map((m) => summary(ctx, m.account)),
      created_at: l.createdAt.toISOString(),
    })),
    section("reactions", exp.reactions, (r: Reaction) => ({
      note_id: r.noteId.toString(),
      emoji: r.emoji,
      created_at: r.createdAt.toISOString(),
    })),
    section("drive_files", exp.driveFiles, (f: DriveFile) => EXPORTED_DRIVE_FILE.view(f, viewer)),
  ];
}

function profileView(ctx: Context, exp: AccountExport): z.infer<typeof ExportedProfileShape> {
  return PROFILE.view(exp.account, viewerOf(ctx));
}

/**
 * The document as JSON text, a piece at a time: a page of rows is read when the one before has
 * been taken, so memory holds one page whatever the account's size.
 */
export async function* exportChunks(ctx: Context, exp: AccountExport): AsyncIterable<string> {
  const head = { exported_at: new Date().toISOString(), profile: profileView(ctx, exp) };
  yield JSON.stringify(head).slice(0, -1);
  for (const [name, rows, view] of sections(ctx, exp)) {
    let out = `,${JSON.stringify(name)}:[`;
    let first = true;
    for await (const row of rows) {
      out += (first ? "" : ",") + JSON.stringify(view(row as never));
      first = false;
      if (out.length >= 64 * 1024) {
        yield out;
        out = "";
      }
    }
    yield `${out}]`;
  }
  yield "}";
}

/** The whole document at once (GraphQL). */
export async function exportDocument(ctx: Context, exp: AccountExport): Promise<AccountExportDocument> {
  const document: Record<string, unknown> = {
    exported_at: new Date().toISOString(),
    profile: profileView(ctx, exp),
  };
  for (const [name, rows, view] of sections(ctx, exp)) {
    const items: unknown[] = [];
    for await (const row of rows) items.push(view(row as never));
    document[name] = items;
  }
  return document as AccountExportDocument;
}
