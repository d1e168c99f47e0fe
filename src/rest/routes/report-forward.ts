// A report about a remote account forwarded to its server (docs/federation.md#moderation).
import { z } from "zod";
import { forwardReport } from "../../domain/reports/forward.ts";
import * as field from "../fields.ts";
import { route } from "../route.ts";

export const reportForwardRoutes = [
  route({
    method: "POST",
    path: "/reports/:report_id/forward",
    operationId: "forwardReport",
    summary:
      "Forward a report about a remote account to its server, as a `Flag` from this server's instance actor naming the account and the report's notes, with its comment; INVALID_REQUEST for a local account (moderators; see docs/federation.md#moderation)",
    tag: "reports",
    auth: "moderator",
    params: z.object({ report_id: field.id("the report") }),
    body: z.unknown(),
    success: { status: 204, description: "queued for delivery" },
    errors: ["REPORT_NOT_FOUND", "INVALID_REQUEST"],
    run: (ctx, { params }) => forwardReport(ctx, params.report_id),
    reply: () => ({ status: 204 }),
  }),
];
