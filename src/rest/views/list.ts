// The documented list (docs/timelines.md#lists) and its view.
import { z } from "zod";
import { qualifiedNameOf } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import * as lists from "../../domain/lists/service.ts";
import type { List } from "../../generated/prisma/client.ts";
import { named, Snowflake } from "../../http/views/wire.ts";

const listFields = { id: Snowflake, title: z.string(), public: z.boolean() };

export const ListCreatedShape = named(
  "ListCreated",
  "A new list, as its create answers it (see docs/timelines.md#lists).",
  z.strictObject(listFields),
);

export const AssigneeShape = named(
  "Assignee",
  "An account assigned to a list (see docs/timelines.md#lists).",
  z.strictObject({ id: Snowflake, name: z.string() }),
);

export const ListShape = named(
  "List",
  "A list with its assignees (see docs/timelines.md#lists).",
  z.strictObject({
    ...listFields,
    assignees: z
      .array(AssigneeShape)
      .max(lists.ASSIGNEES_SHOWN)
      .describe(
        `at most ${lists.ASSIGNEES_SHOWN}, by account id newest first; GET /lists/{list_id}/assignees pages them all`,
      ),
    assignee_count: z.number().int().min(0).describe("extension: how many accounts the list has"),
  }),
);

export const AssignedShape = named(
  "Assigned",
  "The ids of the accounts assigned to a list.",
  z.strictObject({ account_id: z.array(Snowflake) }),
);

export function listCreatedView(list: Pick<List, "id" | "title" | "public">): z.infer<typeof ListCreatedShape> {
  return { id: list.id.toString(), title: list.title, public: list.public };
}

export function assigneeView(ctx: Context, m: lists.ListView["assignees"][number]): z.infer<typeof AssigneeShape> {
  return { id: m.accountId.toString(), name: qualifiedNameOf(ctx, m.account) };
}

export function listView(ctx: Context, list: lists.ListView): z.infer<typeof ListShape> {
  return {
    ...listCreatedView(list),
    assignees: list.assignees.map((m) => assigneeView(ctx, m)),
    assignee_count: list._count.assignees,
  };
}
