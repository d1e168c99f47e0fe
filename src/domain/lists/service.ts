// Lists (docs/timelines.md#lists): only the owner changes a list or sees a private one;
// assigning is all-or-nothing, and new assignees of a public list are notified (`listed`).
import { orGone, Prisma } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import { checkNotBlank, checkStorable, codePoints } from "../accounts/rules.ts";
import { findPublicAccount, PUBLIC_ACCOUNT_SELECT } from "../accounts/service.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { NoteView } from "../notes/service.ts";
import { audienceSql, authorDeletedSql, unfrozenSql, unmutedSql, type Viewer } from "../notes/visibility.ts";
import { notify } from "../notifications/notify.ts";
import { olderThan, parseBeforeId } from "../paging.ts";
import { optionalAccount, requireAccount } from "../sessions/caller.ts";
import type { CallerAccount } from "../sessions/caller-cache.ts";
import { authorsPage, type NoteLoader, noteViews, type TimelineQuery } from "../timelines/page.ts";

export const MAX_TITLE = 100;
export const MAX_TARGETS = 30;
/**
 * Assignees a list shows with itself (docs/timelines.md#bounded-lists: a list's size is not
 * bounded, its answer is); `assignee_count` says how many it has, and GET /lists/{id}/assignees
 * pages them all.
 */
export const ASSIGNEES_SHOWN = 100;
export const ASSIGNEES_PAGE = 100;
/**
 * Lists GET /lists/accounts/{id} answers at once (docs/timelines.md#bounded-lists): how many lists
 * an account owns is not bounded, and each carries up to ASSIGNEES_SHOWN assignees, so a page of 20
 * is at most 2,000 of them (about 150 KB); `before_id` (a list id) pages further, newest first.
 */
export const LISTS_PAGE = 20;

const ASSIGNEE = { accountId: true, account: { select: PUBLIC_ACCOUNT_SELECT } } satisfies Prisma.ListMemberSelect;

// Assignees are shown, so only their public columns are read (never the passphrase hash). By
// account id, newest first, as GET /lists/{id}/assignees pages them.
const WITH_ASSIGNEES = {
  assignees: { orderBy: { accountId: "desc" }, take: ASSIGNEES_SHOWN, select: ASSIGNEE },
  _count: { select: { assignees: true } },
} satisfies Prisma.ListInclude;

export type ListView = Prisma.ListGetPayload<{ include: typeof WITH_ASSIGNEES }>;

/** What decides who sees a list. */
const LIST_RULE = { id: true, ownerId: true, public: true } satisfies Prisma.ListSelect;

function checkTitle(title: string): void {
  checkStorable(title);
  if (codePoints(title) > MAX_TITLE) throw new DomainError("TITLE_TOO_LONG");
  checkNotBlank(title);
}

/** A list the caller may see: a public one, or its own. */
async function visibleList(ctx: Context, listId: string): Promise<ListView> {
  const viewer = optionalAccount(ctx);
  const id = parseSnowflake(listId);
  const list = id === undefined ? null : await ctx.db.list.findUnique({ where: { id }, include: WITH_ASSIGNEES });
  return seenBy(list, viewer);
}

/**
 * GET /lists/{id}/assignees (extension): every assignee of a list the caller may see, by account
 * id newest first, ASSIGNEES_PAGE a page, paged by `before_id` (an account id) as timelines are.
 */
export async function listAssignees(
  ctx: Context,
  listId: string,
  beforeId?: string,
  /** At most ASSIGNEES_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = ASSIGNEES_PAGE,
): Promise<Prisma.ListMemberGetPayload<{ select: typeof ASSIGNEE }>[]> {
  const before = parseBeforeId(beforeId);
  const id = parseSnowflake(listId);
  const list = id === undefined ? null : await ctx.db.list.findUnique({ where: { id }, select: LIST_RULE });
  seenBy(list, optionalAccount(ctx));
  const page = await ctx.db.listMember.findMany({
    where: { listId: id, ...(before === undefined ? {} : { accountId: { lt: before } }) },
    orderBy: { accountId: "desc" },
    take: Math.min(limit, ASSIGNEES_PAGE + 1),
    select: ASSIGNEE,
  });
  return page;
}

/** `list` if the viewer may see it (public, or its own); LIST_NOTFOUND otherwise. */
function seenBy<L extends Pick<ListView, "public" | "ownerId">>(list: L | null, viewer?: CallerAccount): L {
  if (!list || (!list.public && list.ownerId !== viewer?.id)) throw new DomainError("LIST_NOTFOUND");
  return list;
}

/** seenBy's rule as a condition: whether the viewer may see the list (it exists, and is public or its own). */
function seenBySql(list: Prisma.Sql, viewer: Viewer): Prisma.Sql {
  return Prisma.sql`EXISTS (SELECT FROM lists l WHERE l.id = ${list} AND (l.public OR l.owner_id = ${viewer.id}))`;
}

/** A list of the caller's own; anyone else's is LIST_NOTFOUND. */
async function ownList(ctx: Context, listId: string): Promise<ListView> {
  const owner = requireAccount(ctx);
  const list = await visibleList(ctx, listId);
  if (list.ownerId !== owner.id) throw new DomainError("LIST_NOTFOUND");
  return list;
}

export async function createList(ctx: Context, input: { title: string; public?: boolean }): Promise<ListView> {
  const owner = requireAccount(ctx);
  checkTitle(input.title);
  return ctx.db.list.create({
    data: { id: ctx.ids.next(), ownerId: owner.id, title: input.title, public: input.public ?? false },
    include: WITH_ASSIGNEES,
  });
}

export async function updateList(
  ctx: Context,
  listId: string,
  input: { title?: string; public?: boolean },
): Promise<ListView> {
  requireAccount(ctx);
  if (input.title === undefined && input.public === undefined) throw new DomainError("INVALID_REQUEST");
  if (input.title !== undefined) checkTitle(input.title);
  const list = await ownList(ctx, listId);
  return orGone(
    ctx.db.list.update({
      where: { id: list.id },
      data: { title: input.title, public: input.public },
      include: WITH_ASSIGNEES,
    }),
    "LIST_NOTFOUND",
  );
}

export const getList = visibleList;

/**
 * The lists an account owns that the caller may see, newest first, LISTS_PAGE a page, paged by
 * `before_id` (a list id) as timelines are; the (owner_id, id) index serves it.
 */
export async function listsOf(
  ctx: Context,
  nameOrId: string,
  beforeId?: string,
  /** At most LISTS_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit = LISTS_PAGE,
): Promise<ListView[]> {
  const viewer = optionalAccount(ctx);
  const before = parseBeforeId(beforeId);
  const owner = await findPublicAccount(ctx, nameOrId);
  const found = await ctx.db.list.findMany({
    where: { ownerId: owner.id, ...(viewer?.id === owner.id ? {} : { public: true }), ...olderThan(before) },
    orderBy: { id: "desc" },
    include: WITH_ASSIGNEES,
    take: Math.min(limit, LISTS_PAGE + 1),
  });
  return found;
}

/** The accounts `ids` name, all of them or ACCOUNT_NOT_FOUND; at most MAX_TARGETS. */
async function targets(ctx: Context, ids: string[]): Promise<bigint[]> {
  if (ids.length > MAX_TARGETS) throw new DomainError("TOO_MANY_TARGETS");
  if (ids.length === 0) throw new DomainError("INVALID_REQUEST");
  const parsed = ids.map((id) => parseSnowflake(id));
  if (parsed.some((id) => id === undefined)) throw new DomainError("ACCOUNT_NOT_FOUND");
  // In id order, so concurrent changes to the same assignees lock their rows in one order.
  const unique = [...new Set(parsed as bigint[])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const found = await ctx.db.account.count({ where: { id: { in: unique }, deletedAt: null } });
  if (found !== unique.length) throw new DomainError("ACCOUNT_NOT_FOUND");
  return unique;
}

/** Assigns accounts, all or none; each new assignee of a public list is notified. Returns the ids. */
export async function assign(ctx: Context, listId: string, accountIds: string[]): Promise<bigint[]> {
  const owner = requireAccount(ctx);
  const list = await ownList(ctx, listId);
  const ids = await targets(ctx, accountIds);
  await ctx.db.$transaction(async (tx) => {
    // Only the rows this request inserts are new assignees: a concurrent assignment of the same
    // account inserts it once, so it is notified once.
    const added = await tx.listMember.createManyAndReturn({
      data: ids.map((accountId) => ({ listId: list.id, accountId })),
      skipDuplicates: true,
      select: { accountId: true },
    });
    if (!list.public) return;
    for (const { accountId } of added) {
      await notify(ctx, tx, { recipientId: accountId, actorId: owner.id, type: "listed", listId: list.id });
    }
  });
  return ids;
}

export async function unassign(ctx: Context, listId: string, accountIds: string[]): Promise<void> {
  const list = await ownList(ctx, listId);
  const ids = await targets(ctx, accountIds);
  await ctx.db.listMember.deleteMany({ where: { listId: list.id, accountId: { in: ids } } });
}

export async function deleteList(ctx: Context, listId: string): Promise<void> {
  const list = await ownList(ctx, listId);
  await orGone(ctx.db.list.delete({ where: { id: list.id } }), "LIST_NOTFOUND");
}

/** The list whose notes the caller may read (GET /lists/{id}/notes and its stream). */
export async function readableList(ctx: Context, listId: string): Promise<{ id: bigint }> {
  const viewer = requireAccount(ctx);
  const id = parseSnowflake(listId);
  const found = id === undefined ? null : await ctx.db.list.findUnique({ where: { id }, select: LIST_RULE });
  return seenBy(found, viewer);
}

const assigneesOf = (list: bigint | Prisma.Sql) =>
  Prisma.sql`SELECT account_id FROM list_members WHERE list_id = ${list}`;

/** The assignees' notes the caller may see, direct ones apart, newest first. */
export async function listNotes<T = NoteView>(
  ctx: Context,
  listId: string,
  query: TimelineQuery,
  load: NoteLoader<T> = noteViews,
): Promise<T[]> {
  const list = await readableList(ctx, listId);
  return authorsPage(ctx, requireAccount(ctx), assigneesOf(list.id), query, { feed: true }, load);
}

/**
 * Whether note `n` is on a list's timeline for `viewer`, as a condition on one note: listNotes'
 * rules, the list's own included (live updates ask it for every list stream at once, the list
 * and the viewer columns: a list made private or deleted shows its old readers nothing more).
 */
export function listRule(list: Prisma.Sql, viewer: Viewer): Prisma.Sql {
  return Prisma.sql`${seenBySql(list, viewer)} AND n.author_id IN (${assigneesOf(list)}) AND n.visibility <> 'direct'
    AND ${audienceSql(viewer)} ${unfrozenSql(undefined)} ${unmutedSql(viewer)}`;
}

/**
 * Whether a list's timeline may have shown the deleted note `n` to `viewer`: listRule, where what
 * the deletion of its author's account removed meanwhile (the list membership, its unfrozen
 * state) counts as still there.
 */
export function listMayHaveShown(list: Prisma.Sql, viewer: Viewer): Prisma.Sql {
  return Prisma.sql`${seenBySql(list, viewer)} AND n.visibility <> 'direct'
    AND (${authorDeletedSql} OR (n.author_id IN (${assigneesOf(list)}) AND ${audienceSql(viewer)}))`;
}
