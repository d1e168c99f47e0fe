// Routes of remote servers' moderation (docs/federation.md#moderation): moderators list the servers
// this one federates with, and block, silence or allow one.
import { z } from "zod";
import { moderatorInstances } from "../../domain/instances/admin.ts";
import { INSTANCE_POLICY_CHOICES, moderateInstance } from "../../domain/instances/policies.ts";
import { INSTANCES_PAGE } from "../../domain/instances/status.ts";
import { route } from "../route.ts";
import { InstancePolicySetShape, InstanceShape, instanceView } from "../views/instance.ts";

export const adminInstanceRoutes = [
  route({
    method: "GET",
    path: "/admin/instances",
    operationId: "getInstances",
    summary: `Remote servers this one delivers to, has deliveries waiting for, or has a policy for, by host, ${INSTANCES_PAGE} a page (moderators; see docs/federation.md#moderation)`,
    tag: "moderation",
    auth: "moderator",
    query: z.object({
      after: z.string().optional().describe("the last host of the page before: the next page"),
    }),
    success: {
      status: 200,
      description: `at most ${INSTANCES_PAGE} servers`,
      schema: z.array(InstanceShape).max(INSTANCES_PAGE),
    },
    errors: [],
    run: (ctx, { query }) => moderatorInstances(ctx, { after: query.after }),
    reply: (list) => ({ status: 200, body: list.map(instanceView) }),
  }),
  route({
    method: "POST",
    path: "/admin/instances",
    operationId: "setInstancePolicy",
    summary:
      "Block, silence or allow a remote server, on every instance of this fleet at once; a block ends the follows " +
      "between its accounts and this server's (moderators; see docs/federation.md#moderation)",
    tag: "moderation",
    auth: "moderator",
    body: z.object({
      host: z.string().describe("the server's host (with its port, or a URL of it); its subdomains too"),
      policy: z
        .string()
        .meta({ enum: INSTANCE_POLICY_CHOICES, description: "`block`, `silence` or `allow` (INVALID_REQUEST else)" }),
    }),
    success: { status: 200, description: "set", schema: InstancePolicySetShape },
    errors: [],
    run: (ctx, { body }) => moderateInstance(ctx, body.host, body.policy),
    reply: (set) => ({ status: 200, body: set }),
  }),
];
