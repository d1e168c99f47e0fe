// A remote server as moderators see it (docs/federation.md#moderation): its policy here and how
// delivering to it goes (docs/federation.md#delivery).
import { z } from "zod";
import type { InstanceStatus } from "../../domain/instances/status.ts";
import { named, Timestamp } from "../../http/views/wire.ts";

const Policy = z.enum(["block", "silence"]);

export const InstanceShape = named(
  "Instance",
  "A remote server: the moderators' policy for it, and how deliveries to it go (see docs/federation.md#moderation).",
  z.strictObject({
    host: z.string().describe("its host, with its port when it has one"),
    policy: Policy.nullable().describe("`block`, `silence`, or null (allowed); a parent domain's policy holds for it"),
    updated_at: Timestamp.nullable().describe("when its own policy was last set (null: it has none of its own)"),
    last_success_at: Timestamp.nullable().describe("its last delivery answered 2xx"),
    last_failure_at: Timestamp.nullable().describe("its last delivery that failed"),
    failures: z.number().int().describe("deliveries that failed since the last that succeeded"),
    last_error: z.string().nullable().describe("why the last failed one failed"),
    queued: z.number().int().describe("deliveries waiting for it: queued, retried or held while it is paused"),
  }),
);

export const InstancePolicySetShape = named(
  "InstancePolicySet",
  "A server's policy as set: its host as policies name it, and the policy (`allow`: none).",
  z.strictObject({ host: z.string(), policy: z.enum(["block", "silence", "allow"]) }),
);

export function instanceView(row: InstanceStatus): z.infer<typeof InstanceShape> {
  return {
    host: row.host,
    policy: row.policy,
    updated_at: row.updatedAt?.toISOString() ?? null,
    last_success_at: row.lastSuccessAt?.toISOString() ?? null,
    last_failure_at: row.lastFailureAt?.toISOString() ?? null,
    failures: row.failures,
    last_error: row.lastError,
    queued: row.queued,
  };
}
