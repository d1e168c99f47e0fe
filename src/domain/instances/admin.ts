// The moderators' view of remote servers (docs/federation.md#moderation): the operator's view
// (status.ts) with when each server's own policy was last set.
import type { Context } from "../context.ts";
import { requireModerator } from "../sessions/caller.ts";
import { listInstancePolicies } from "./policies.ts";
import { type InstanceStatus, type ListInstancesOptions, listInstances } from "./status.ts";

export interface ModeratedInstance extends InstanceStatus {
  /** When its own policy was last set; null when it has none of its own (a parent domain's may hold). */
  updatedAt: Date | null;
}

/** GET /admin/instances: every server listInstances names, for a moderator or higher. */
export async function moderatorInstances(
  ctx: Context,
  options: ListInstancesOptions = {},
): Promise<ModeratedInstance[]> {
  requireModerator(ctx);
  const [list, policies] = await Promise.all([listInstances(ctx, options), listInstancePolicies(ctx)]);
  const updated = new Map(policies.map((row) => [row.host, row.updatedAt]));
  return list.map((instance) => ({ ...instance, updatedAt: updated.get(instance.host) ?? null }));
}
