// A report about a remote account forwarded to its server (docs/federation.md#moderation).
import { forwardReport } from "../domain/reports/forward.ts";
import { builder, done } from "./builder.ts";

builder.mutationFields((t) => ({
  forwardReport: t.boolean({
    errors: {},
    description:
      "Forward a report about a remote account to its server, as a `Flag` from this server's instance actor (moderators); INVALID_REQUEST for a local account.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(forwardReport(ctx, args.id.toString())),
  }),
}));
