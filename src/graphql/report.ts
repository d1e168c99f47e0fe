// Reports (docs/accounts.md#reports): `report` for any account; `reports` and `resolveReport` for
// moderators.
import * as reports from "../domain/reports/service.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";
import { AFTER_DESCRIPTION, connectionType, firstDescription, page, pageComplexity } from "./connection.ts";

const ReportRef = builder.objectRef<reports.ReportView>("Report").implement({
  description: "A report of an account to the moderators: who reported whom, why, and the notes named.",
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    reporter: t.field({
      type: AccountRef,
      nullable: true,
      description: "The local account that reported; null for a report another server sent (`reporterHost`).",
      resolve: (r) => r.reporter,
    }),
    reporterHost: t.string({
      nullable: true,
      description: "The server that sent the report (an ActivityPub `Flag`), by its host; null for a local account's.",
      resolve: (r) => r.reporterHost,
    }),
    account: t.field({ type: AccountRef, resolve: (r) => r.account }),
    comment: t.exposeString("comment"),
    noteIds: t.idList({ resolve: (r) => r.noteIds.map(String) }),
    createdAt: t.field({ type: "DateTime", resolve: (r) => r.createdAt }),
    resolved: t.exposeBoolean("resolved"),
    resolvedAt: t.field({ type: "DateTime", nullable: true, resolve: (r) => r.resolvedAt }),
  }),
});

const ReportConnection = connectionType(
  "Report",
  ReportRef,
  "A page of reports, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

builder.queryFields((t) => ({
  reports: t.field({
    type: ReportConnection,
    errors: { directResult: true },
    complexity: pageComplexity(reports.REPORTS_PAGE),
    description: "Reports, newest first: open ones unless `resolved: true` (moderators).",
    args: {
      resolved: t.arg.boolean({ description: "false (the default): open reports; true: resolved ones" }),
      first: t.arg.int({ description: firstDescription(reports.REPORTS_PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) =>
      page(args, reports.REPORTS_PAGE, (after, limit) =>
        reports.listReports(ctx, { resolved: args.resolved ?? undefined, beforeId: after, limit }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  report: t.id({
    errors: {},
    description: `Report an account to the moderators, with a comment (0 to ${reports.COMMENT_MAX} characters) and up to ${reports.REPORT_NOTES_MAX} of its notes the caller may see. The new report's id.`,
    args: {
      name: t.arg.string({ required: true }),
      comment: t.arg.string(),
      noteIds: t.arg.idList(),
    },
    resolve: async (_root, args, ctx) => {
      const { id } = await reports.createReport(ctx, args.name, {
        comment: args.comment ?? undefined,
        noteIds: args.noteIds?.map(String),
      });
      return id.toString();
    },
  }),
  resolveReport: t.boolean({
    errors: {},
    description: "Resolve a report (moderators); resolving a resolved one changes nothing.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(reports.resolveReport(ctx, args.id.toString())),
  }),
}));
