// The report (docs/accounts.md#reports) as moderators read it, and what its creation answers.
import { z } from "zod";
import type { Context } from "../../domain/context.ts";
import type { ReportView } from "../../domain/reports/service.ts";
import { AccountSummaryShape, accountSummaryView } from "../../http/views/account.ts";
import { named, Snowflake, Timestamp } from "../../http/views/wire.ts";

export const ReportCreatedShape = named(
  "ReportCreated",
  "The id of a new report (see docs/accounts.md#reports).",
  z.strictObject({ id: Snowflake }),
);

export const ReportingServerShape = named(
  "ReportingServer",
  "Another server that sent a report (an ActivityPub `Flag`), by its host (see docs/federation.md#moderation).",
  z.strictObject({ host: z.string() }),
);

export const ReportShape = named(
  "Report",
  "A report of an account to the moderators: who reported whom, why, and the notes named (see docs/accounts.md#reports).",
  z.strictObject({
    id: Snowflake,
    reporter: z
      .union([AccountSummaryShape, ReportingServerShape])
      .describe("the local account that reported, or the server that sent the report"),
    account: AccountSummaryShape,
    comment: z.string(),
    note_ids: z.array(Snowflake),
    created_at: Timestamp,
    resolved: z.boolean(),
    resolved_at: Timestamp.nullable().describe("when a moderator resolved it; null while open"),
  }),
);

export function reportView(ctx: Context, r: ReportView): z.infer<typeof ReportShape> {
  return {
    id: r.id.toString(),
    reporter: r.reporter ? accountSummaryView(ctx, r.reporter) : { host: r.reporterHost ?? "" },
    account: accountSummaryView(ctx, r.account),
    comment: r.comment,
    note_ids: r.noteIds.map(String),
    created_at: r.createdAt.toISOString(),
    resolved: r.resolved,
    resolved_at: r.resolvedAt?.toISOString() ?? null,
  };
}
