// A report forwarded to the reported account's server (docs/federation.md#moderation): a `Flag`
// from this server's instance actor, naming the account and the notes the report names, with its
// comment. Written to the federation outbox in its own transaction (src/federation/report-flag.ts
// builds it when relayed), so a crash loses nothing and a forward is sent once.
import { parseSnowflake } from "../../db/snowflake.ts";
import type { Context } from "../context.ts";
import { DomainError } from "../errors.ts";
import { requireModerator } from "../sessions/caller.ts";

/** The outbox kind of a forwarded report; its row's `object_id` is the report's id. */
export const FORWARD_KIND = "forward-report";
/**
 * The outbox sender of what the instance actor sends: no account has id 0 (ids are snowflakes),
 * and the outbox keeps each sender's rows in order, so forwards go one after the other.
 */
export const INSTANCE_SENDER = 0n;

/** Forwards report `reportId` about a remote account to its server; INVALID_REQUEST for a local one. */
export async function forwardReport(ctx: Context, reportId: string): Promise<void> {
  requireModerator(ctx);
  const id = parseSnowflake(reportId);
  const report =
    id === undefined
      ? null
      : await ctx.db.report.findUnique({
          where: { id },
          select: { id: true, account: { select: { id: true, host: true } } },
        });
  if (!report) throw new DomainError("REPORT_NOT_FOUND");
  if (report.account.host === null) throw new DomainError("INVALID_REQUEST");
  // Without federation there is no server to send to, and nothing is written.
  if (!ctx.federation) return;
  await ctx.db.federationOutbox.create({
    data: {
      kind: FORWARD_KIND,
      sender: INSTANCE_SENDER,
      recipient: report.account.id,
      activityId: `${ctx.config.publicUrl}/#flags/${ctx.ids.next()}`,
      objectId: report.id.toString(),
    },
  });
}
