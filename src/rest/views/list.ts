// The documented list (docs/timelines.md#lists) and its view.
import { z } from "zod";
import type { PublicAccount } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import * as lists from "../../domain/lists/service.ts";
import type { List } from "../../generated/prisma/client.ts";
import { named, nested, Snowflake, wireObject } from "../../http/views/wire.ts";
import { ACCOUNT } from "../../projection/account.ts";
import { viewerOf } from "../../projection/field.ts";
import { LIST } from "../../projection/list.ts";

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

const LIST_CREATED = wireObject<Pick<List, "id" | "title" | "public">, typeof ListCreatedShape>(ListCreatedShape, {
  id: LIST.id,
  title: LIST.title,
  public: LIST.public,
});

const ASSIGNEE = wireObject<PublicAccount, typeof AssigneeShape>(AssigneeShape, { id: ACCOUNT.id, name: ACCOUNT.name });

const LIST_WIRE = wireObject<lists.ListView, typeof ListShape>(ListShape, {
  ...LIST_CREATED.members,
  assignees: nested(LIST.assignees, ASSIGNEE),
  assignee_count: LIST.assigneeCount,
});

export function listCreatedView(
  ctx: Context,
  list: Pick<List, "id" | "title" | "public">,
): z.infer<typeof ListCreatedShape> {
  return LIST_CREATED.view(list, viewerOf(ctx));
}

export function assigneeView(ctx: Context, m: lists.ListView["assignees"][number]): z.infer<typeof AssigneeShape> {
  return ASSIGNEE.view(m.account, viewerOf(ctx));
}

export function listView(ctx: Context, list: lists.ListView): z.infer<typeof ListShape> {
  return LIST_WIRE.view(list, viewerOf(ctx));
}
