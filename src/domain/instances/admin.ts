// The moderators' view of remote servers (docs/federation.md#moderation): the operator's view
// (status.ts), for a moderator or higher.
import type { Context } from "../context.ts";
import { requireModerator } from "../sessions/caller.ts";
import { type InstanceStatus, type ListInstancesOptions, listInstances } from "./status.ts";

/** GET /admin/instances: every server listInstances names, for a moderator or higher. */
export function moderatorInstances(ctx: Context, options: ListInstancesOptions = {}): Promise<InstanceStatus[]> {
  requireModerator(ctx);
  return listInstances(ctx, options);
}
