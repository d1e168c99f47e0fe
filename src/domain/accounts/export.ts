// An account's data for its owner to take away (docs/accounts.md#export): the profile, then each
// kind of row read page by page in key order, so that a client can be handed an account of 100,000
// notes as a stream in bounded memory (src/rest/routes/accounts.ts) or as one document (GraphQL).
// The pages are separate reads, not one snapshot: a row changed while the export runs may show as
// it was or as it is.
import type { Prisma } from "../../db/client.ts";
import type { Account, Bookmark, DriveFile, List, Reaction } from "../../generated/prisma/client.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { requireAccount } from "../sessions/caller.ts";
import { findAccount } from "./service.ts";

const PAGE = 500;
/** Lists carry their assignees: fewer a page. */
const LIST_PAGE = 50;

const SUMMARY = {
  id: true,
  name: true,
  host: true,
  nickname: true,
  avatarFileId: true,
  avatarUrl: true,
} satisfies Prisma.AccountSelect;
export type AccountSummary = Prisma.AccountGetPayload<{ select: typeof SUMMARY }>;

export type ExportedNote = Prisma.NoteGetPayload<{ include: { attachments: true } }>;
export interface ExportedRelation {
  account: AccountSummary;
  createdAt: Date;
}
export type ExportedList = List & { assignees: { account: AccountSummary }[] };

export interface AccountExport {
  account: Account;
  /** Each kind of row, in key order, read a page at a time as the iteration asks. */
  notes: AsyncIterable<ExportedNote>;
  bookmarks: AsyncIterable<Bookmark>;
  follows: AsyncIterable<ExportedRelation>;
  followers: AsyncIterable<ExportedRelation>;
  blocks: AsyncIterable<ExportedRelation>;
  mutes: AsyncIterable<ExportedRelation>;
  lists: AsyncIterable<ExportedList>;
  reactions: AsyncIterable<Reaction>;
  driveFiles: AsyncIterable<DriveFile>;
}

/** Rows a page at a time: `read(after)` answers the page past the last row of the one before. */
async function* paged<T>(read: (after: T | undefined) => Promise<T[]>, size: number): AsyncIterable<T> {
  let after: T | undefined;
  for (;;) {
    const page = await read(after);
    yield* page;
    if (page.length < size) return;
    after = page[page.length - 1];
  }
}

/**
 * GET /accounts/{name}/export: the owner's only (another caller: NO_PERMISSION). Nothing is read
 * but the account until the sections are iterated.
 */
export async function exportAccount(ctx: Context, nameOrId: string): Promise<AccountExport> {
  const caller = requireAccount(ctx);
  const account = await findAccount(ctx, nameOrId);
  if (account.id !== caller.id) throw new DomainError("NO_PERMISSION");
  const { db } = ctx;
  const id = account.id;
  const live = { deletedAt: null };
  return {
    account,
    notes: paged(
      (after) =>
        db.note.findMany({
          where: { authorId: id, ...(after ? { id: { gt: after.id } } : {}) },
          include: { attachments: { orderBy: { position: "asc" } } },
          orderBy: { id: "asc" },
          take: PAGE,
        }),
      PAGE,
    ),
    bookmarks: paged(
      (after) =>
        db.bookmark.findMany({
          where: { accountId: id, ...(after ? { noteId: { gt: after.noteId } } : {}) },
          orderBy: { noteId: "asc" },
          take: PAGE,
        }),
      PAGE,
    ),
    follows: paged(
      async (after) =>
        (
          await db.follow.findMany({
            where: { followerId: id, followee: live, ...(after ? { followeeId: { gt: after.account.id } } : {}) },
            include: { followee: { select: SUMMARY } },
            orderBy: { followeeId: "asc" },
            take: PAGE,
          })
        ).map((f) => ({ account: f.followee, createdAt: f.createdAt })),
      PAGE,
    ),
    followers: paged(
      async (after) =>
        (
          await db.follow.findMany({
            where: { followeeId: id, follower: live, ...(after ? { followerId: { gt: after.account.id } } : {}) },
            include: { follower: { select: SUMMARY } },
            orderBy: { followerId: "asc" },
            take: PAGE,
          })
        ).map((f) => ({ account: f.follower, createdAt: f.createdAt })),
      PAGE,
    ),
    blocks: paged(
      async (after) =>
        (
          await db.block.findMany({
            where: { blockerId: id, blocked: live, ...(after ? { blockedId: { gt: after.account.id } } : {}) },
            include: { blocked: { select: SUMMARY } },
            orderBy: { blockedId: "asc" },
            take: PAGE,
          })
        ).map((b) => ({ account: b.blocked, createdAt: b.createdAt })),
      PAGE,
    ),
    mutes: paged(
      async (after) =>
        (
          await db.mute.findMany({
            where: { muterId: id, muted: live, ...(after ? { mutedId: { gt: after.account.id } } : {}) },
            include: { muted: { select: SUMMARY } },
            orderBy: { mutedId: "asc" },
            take: PAGE,
          })
        ).map((m) => ({ account: m.muted, createdAt: m.createdAt })),
      PAGE,
    ),
    lists: paged(
      (after) =>
        db.list.findMany({
          where: { ownerId: id, ...(after ? { id: { gt: after.id } } : {}) },
          include: {
            assignees: {
              where: { account: live },
              include: { account: { select: SUMMARY } },
              orderBy: { accountId: "asc" },
            },
          },
          orderBy: { id: "asc" },
          take: LIST_PAGE,
        }),
      LIST_PAGE,
    ),
    reactions: paged(
      (after) =>
        db.reaction.findMany({
          where: { accountId: id, ...(after ? { noteId: { gt: after.noteId } } : {}) },
          orderBy: { noteId: "asc" },
          take: PAGE,
        }),
      PAGE,
    ),
    driveFiles: paged(
      (after) =>
        db.driveFile.findMany({
          where: { ownerId: id, ...(after ? { id: { gt: after.id } } : {}) },
          orderBy: { id: "asc" },
          take: PAGE,
        }),
      PAGE,
    ),
  };
}
