// Reports (docs/accounts.md#reports): an account reports another to the moderators, with a comment
// and notes of its as evidence; every moderator and admin hears of it from the system (the `system`
// actor of docs/notifications.md#shape, a `reported` notification carrying the report's id);
// moderators list them, newest first, and resolve them. Another server's report (a `Flag`,
// docs/federation.md#moderation) is kept the same way, its reporter that server's host.
import type { Prisma } from "../../db/client.ts";
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Report } from "../../generated/prisma/client.ts";
import { checkStorable, codePoints } from "../accounts/rules.ts";
import { findPublicAccount, PUBLIC_ACCOUNT_SELECT, type PublicAccount } from "../accounts/service.ts";
import type { Context, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { visibleTo } from "../notes/visibility.ts";
import { parseBeforeId } from "../paging.ts";
import { MODERATOR_ROLES, requireAccount, requireModerator } from "../sessions/caller.ts";

/** Characters (code points) a report's comment holds at most. */
export const COMMENT_MAX = 1000;
/** Notes a report names at most. */
export const REPORT_NOTES_MAX = 20;
export const REPORTS_PAGE = 40;

export interface ReportInput {
  comment?: string;
  noteIds?: string[];
}

export interface ReportView extends Report {
  /** The local account that reported; null for a report another server sent (`reporterHost`). */
  reporter: PublicAccount | null;
  account: PublicAccount;
}

const REPORT_INCLUDE = {
  reporter: { select: PUBLIC_ACCOUNT_SELECT },
  account: { select: PUBLIC_ACCOUNT_SELECT },
} as const;

/**
 * Reports an account (not oneself). The notes must be the account's and seen by the caller,
 * each named once or more (kept once). The report and its notifications are written together.
 */
export async function createReport(ctx: Context, nameOrId: string, input: ReportInput): Promise<{ id: bigint }> {
  const reporter = requireAccount(ctx);
  const comment = input.comment ?? "";
  checkStorable(comment);
  if (codePoints(comment) > COMMENT_MAX) throw new DomainError("INVALID_REQUEST");
  const named = input.noteIds ?? [];
  if (named.length > REPORT_NOTES_MAX) throw new DomainError("INVALID_REQUEST");
  const account = await findPublicAccount(ctx, nameOrId);
  if (account.id === reporter.id) throw new DomainError("INVALID_REQUEST");
  const ids = [...new Set(named.map((text) => parseSnowflake(text)))];
  if (ids.some((id) => id === undefined)) throw new DomainError("NOTE_NOT_FOUND");
  const noteIds = ids as bigint[];
  const seen = noteIds.length
    ? await ctx.db.note.count({ where: { AND: [{ id: { in: noteIds }, authorId: account.id }, visibleTo(reporter)] } })
    : 0;
  if (seen !== noteIds.length) throw new DomainError("NOTE_NOT_FOUND");
  const id = ctx.ids.next();
  await ctx.db.$transaction(async (tx) => {
    await tx.report.create({ data: { id, reporterId: reporter.id, accountId: account.id, comment, noteIds } });
    await tellModerators(ctx, tx, id, reporter.id);
  });
  return { id };
}

/** Every moderator and admin (but the reporter) hears of report `id`, from the system. */
async function tellModerators(services: Services, tx: Prisma.TransactionClient, id: bigint, reporterId?: bigint) {
  const moderators = await tx.account.findMany({
    where: { role: { in: MODERATOR_ROLES }, ...(reporterId === undefined ? {} : { id: { not: reporterId } }) },
    select: { id: true },
  });
  await tx.notification.createMany({
    data: moderators.map((m) => ({ id: services.ids.next(), recipientId: m.id, type: "reported", reportId: id })),
  });
}

export interface ReceivedReport {
  /** The server that sent it, by its host. */
  reporterHost: string;
  /** The local account it is about. */
  accountId: bigint;
  /** The notes it names: those of the account are kept, REPORT_NOTES_MAX at most. */
  noteIds: bigint[];
  /** Plain text; cut to COMMENT_MAX. */
  comment: string;
}

/**
 * A report another server sent (a `Flag`: docs/federation.md#moderation), kept as a local one is,
 * its reporter the server, and told to the moderators the same way. Null when the account is no
 * local account (deleted, or another server's).
 */
export async function receiveReport(services: Services, input: ReceivedReport): Promise<{ id: bigint } | null> {
  const account = await services.db.account.findFirst({
    where: { id: input.accountId, host: null, deletedAt: null },
    select: { id: true },
  });
  if (!account) return null;
  const named = [...new Set(input.noteIds)];
  const notes = named.length
    ? await services.db.note.findMany({
        where: { id: { in: named }, authorId: account.id },
        select: { id: true },
        orderBy: { id: "asc" },
        take: REPORT_NOTES_MAX,
      })
    : [];
  const comment = Array.from(input.comment).slice(0, COMMENT_MAX).join("");
  const id = services.ids.next();
  await services.db.$transaction(async (tx) => {
    await tx.report.create({
      data: {
        id,
        reporterHost: input.reporterHost,
        accountId: account.id,
        comment,
        noteIds: notes.map((n) => n.id),
      },
    });
    await tellModerators(services, tx, id);
  });
  return { id };
}

export interface ReportsQuery {
  /** Open (false, the default) or resolved (true) reports. */
  resolved?: boolean;
  beforeId?: string;
  /** At most REPORTS_PAGE + 1 (GraphQL asks one more to know if there is a next page). */
  limit?: number;
}

/** Reports for moderators, newest first, REPORTS_PAGE a page, paged by `beforeId` as timelines are. */
export async function listReports(ctx: Context, query: ReportsQuery = {}): Promise<ReportView[]> {
  requireModerator(ctx);
  return findReports(ctx, query);
}

/** listReports without a caller: for the operator CLI, who is no account. */
export async function findReports(services: Services, query: ReportsQuery = {}): Promise<ReportView[]> {
  const before = parseBeforeId(query.beforeId);
  const reports = await services.db.report.findMany({
    where: { resolved: query.resolved ?? false, ...(before === undefined ? {} : { id: { lt: before } }) },
    orderBy: { id: "desc" },
    take: Math.min(query.limit ?? REPORTS_PAGE, REPORTS_PAGE + 1),
    include: REPORT_INCLUDE,
  });
  return reports;
}

/** Closes a report; closing a closed one changes nothing. */
export async function resolveReport(ctx: Context, reportId: string): Promise<void> {
  requireModerator(ctx);
  const id = parseSnowflake(reportId);
  if (id === undefined) throw new DomainError("REPORT_NOT_FOUND");
  const { count } = await ctx.db.report.updateMany({
    where: { id, resolved: false },
    data: { resolved: true, resolvedAt: new Date() },
  });
  if (count === 0 && !(await ctx.db.report.count({ where: { id } }))) throw new DomainError("REPORT_NOT_FOUND");
}
