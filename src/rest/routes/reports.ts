// Routes of reports (docs/accounts.md#reports): any account reports another; moderators list and
// resolve.
import { z } from "zod";
import * as reports from "../../domain/reports/service.ts";
import * as field from "../fields.ts";
import { queryBoolean, querySnowflake } from "../query.ts";
import { route } from "../route.ts";
import { ReportCreatedShape, ReportShape, reportView } from "../views/report.ts";

export const reportRoutes = [
  route({
    method: "POST",
    path: "/accounts/:account_name/report",
    operationId: "reportAccount",
    summary: `Report an account to the moderators, with a comment (0 to ${reports.COMMENT_MAX} characters) and up to ${reports.REPORT_NOTES_MAX} of its notes the caller may see; every moderator gets a \`reported\` notification from the system (see docs/accounts.md#reports)`,
    tag: "reports",
    auth: "required",
    params: z.object({ account_name: field.accountRef }),
    body: z.object({
      comment: z
        .string()
        .meta({
          maxLength: reports.COMMENT_MAX,
          description: `0 to ${reports.COMMENT_MAX} characters (INVALID_REQUEST past it)`,
        })
        .optional(),
      note_ids: z
        .array(field.id("a note of the account the caller may see"))
        .max(reports.REPORT_NOTES_MAX)
        .optional()
        .describe(`up to ${reports.REPORT_NOTES_MAX} of the account's notes`),
    }),
    success: { status: 201, description: "reported", schema: ReportCreatedShape },
    errors: ["ACCOUNT_NOT_FOUND", "NOTE_NOT_FOUND"],
    run: (ctx, { params, body }) =>
      reports.createReport(ctx, params.account_name, { comment: body.comment, noteIds: body.note_ids }),
    reply: (report) => ({ status: 201, body: { id: report.id.toString() } }),
  }),
  route({
    method: "GET",
    path: "/reports",
    operationId: "getReports",
    summary: `Reports, newest first, ${reports.REPORTS_PAGE} a page: open ones unless \`resolved=true\` (moderators; see docs/accounts.md#reports)`,
    tag: "reports",
    auth: "moderator",
    query: z.object({
      resolved: queryBoolean.optional().describe("false (the default): open reports; true: resolved ones"),
      before_id: querySnowflake.optional(),
    }),
    success: {
      status: 200,
      description: `at most ${reports.REPORTS_PAGE} reports`,
      schema: z.array(ReportShape).max(reports.REPORTS_PAGE),
    },
    errors: ["NOTHING_LEFT"],
    run: (ctx, { query }) => reports.listReports(ctx, { resolved: query.resolved, beforeId: query.before_id }),
    reply: (list, ctx) => ({ status: 200, body: list.map((r) => reportView(ctx, r)) }),
  }),
  route({
    method: "POST",
    path: "/reports/:report_id/resolve",
    operationId: "resolveReport",
    summary: "Resolve a report; resolving a resolved one changes nothing (moderators; see docs/accounts.md#reports)",
    tag: "reports",
    auth: "moderator",
    params: z.object({ report_id: field.id("the report") }),
    body: z.unknown(),
    success: { status: 204, description: "resolved" },
    errors: ["REPORT_NOT_FOUND"],
    run: (ctx, { params }) => reports.resolveReport(ctx, params.report_id),
    reply: () => ({ status: 204 }),
  }),
];
