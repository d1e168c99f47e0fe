// Remote servers' moderation (docs/federation.md#moderation): `instances` and `setInstancePolicy`
// for moderators.

import { moderatorInstances } from "../domain/instances/admin.ts";
import { INSTANCE_POLICY_CHOICES, type InstancePolicyChoice, moderateInstance } from "../domain/instances/policies.ts";
import type { InstanceStatus } from "../domain/instances/status.ts";
import { INSTANCES_PAGE } from "../domain/instances/status.ts";
import { builder } from "./builder.ts";
import { OPEN_ENUM } from "./open-enum.ts";

const InstancePolicyEnum = builder.enumType("InstancePolicy", { values: ["block", "silence"] as const });

// Open (open-enum.ts): an unknown policy reaches the domain, which answers INVALID_REQUEST as REST does.
const InstancePolicyChoiceEnum = builder.enumType("InstancePolicyChoice", {
  values: INSTANCE_POLICY_CHOICES,
  extensions: OPEN_ENUM,
});

const InstanceRef = builder.objectRef<InstanceStatus>("Instance").implement({
  description: "A remote server: the moderators' policy for it, and how deliveries to it go.",
  fields: (t) => ({
    host: t.exposeString("host", { description: "Its host, with its port when it has one." }),
    policy: t.field({
      type: InstancePolicyEnum,
      nullable: true,
      description: "`block`, `silence`, or null (allowed); a parent domain's policy holds for it.",
      resolve: (i) => i.policy,
    }),
    updatedAt: t.field({
      type: "DateTime",
      nullable: true,
      description: "When its own policy was last set (null: it has none of its own).",
      resolve: (i) => i.updatedAt,
    }),
    lastSuccessAt: t.field({ type: "DateTime", nullable: true, resolve: (i) => i.lastSuccessAt }),
    lastFailureAt: t.field({ type: "DateTime", nullable: true, resolve: (i) => i.lastFailureAt }),
    failures: t.exposeInt("failures", { description: "Deliveries that failed since the last that succeeded." }),
    lastError: t.exposeString("lastError", { nullable: true, description: "Why the last failed one failed." }),
    queued: t.exposeInt("queued", { description: "Deliveries waiting for it: queued, retried or held." }),
  }),
});

const InstancePolicySetRef = builder
  .objectRef<{ host: string; policy: InstancePolicyChoice }>("InstancePolicySet")
  .implement({
    description: "A server's policy as set: its host as policies name it, and the policy (`allow`: none).",
    fields: (t) => ({
      host: t.exposeString("host"),
      policy: t.field({ type: InstancePolicyChoiceEnum, resolve: (s) => s.policy }),
    }),
  });

builder.queryFields((t) => ({
  instances: t.field({
    type: [InstanceRef],
    errors: {},
    complexity: { field: INSTANCES_PAGE, multiplier: INSTANCES_PAGE },
    description: `Remote servers this one delivers to, has deliveries waiting for, or has a policy for, by host, ${INSTANCES_PAGE} at a time (moderators).`,
    args: { after: t.arg.string({ description: "The last host of the page before: the next page." }) },
    resolve: (_root, args, ctx) => moderatorInstances(ctx, { after: args.after ?? undefined }),
  }),
}));

builder.mutationFields((t) => ({
  setInstancePolicy: t.field({
    type: InstancePolicySetRef,
    errors: {},
    description:
      "Block, silence or allow a remote server, on every instance of this fleet at once; a block ends the follows between its accounts and this server's (moderators).",
    args: {
      host: t.arg.string({ required: true, description: "The server's host (with its port); its subdomains too." }),
      policy: t.arg({ type: InstancePolicyChoiceEnum, required: true }),
    },
    resolve: (_root, args, ctx) => moderateInstance(ctx, args.host, args.policy),
  }),
}));
