// Lists: their members, and the list queries and mutations.
import * as lists from "../domain/lists/service.ts";
import { LIST } from "../projection/list.ts";
import { AccountConnection } from "./account.ts";
import { builder, done } from "./builder.ts";
import { AFTER_DESCRIPTION, connectionType, firstDescription, page, pageComplexity } from "./connection.ts";
import { projected } from "./projected.ts";

const List = builder.objectRef<lists.ListView>("List").implement({
  description: "A list of accounts. Private lists are their owner's alone.",
  fields: (t) => ({
    id: t.id(projected(LIST.id)),
    title: t.string(projected(LIST.title)),
    public: t.boolean(projected(LIST.public)),
    assignees: t.field({
      type: AccountConnection,
      errors: { directResult: true },
      complexity: pageComplexity(lists.ASSIGNEES_PAGE, lists.ASSIGNEES_SHOWN),
      description: `Every assignee, by account id newest first. The first ${lists.ASSIGNEES_SHOWN} come with the list; later pages are read on demand.`,
      args: {
        first: t.arg.int({ description: firstDescription(lists.ASSIGNEES_PAGE) }),
        after: t.arg.string({ description: AFTER_DESCRIPTION }),
      },
      resolve: (l, args, ctx) => {
        const first = args.first ?? lists.ASSIGNEES_SHOWN;
        if (!args.after && Number.isInteger(first) && first >= 1 && first <= lists.ASSIGNEES_SHOWN)
          return { items: l.assignees.slice(0, first).map((m) => m.account), hasNextPage: l._count.assignees > first };
        return page({ first, after: args.after }, lists.ASSIGNEES_PAGE, async (after, limit) =>
          (await lists.listAssignees(ctx, l.id.toString(), after, limit)).map((m) => m.account),
        );
      },
    }),
    assigneeCount: t.int({ description: "How many accounts the list has.", ...projected(LIST.assigneeCount) }),
  }),
});

const ListConnection = connectionType(
  "List",
  List,
  "A page of lists, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

builder.queryFields((t) => ({
  list: t.field({
    type: List,
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => lists.getList(ctx, args.id.toString()),
  }),
  listsOf: t.field({
    type: ListConnection,
    errors: { directResult: true },
    complexity: pageComplexity(lists.LISTS_PAGE),
    description: "The lists an account owns that the caller may see, newest first.",
    args: {
      name: t.arg.string({ required: true }),
      first: t.arg.int({ description: firstDescription(lists.LISTS_PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) =>
      page(args, lists.LISTS_PAGE, (after, limit) => lists.listsOf(ctx, args.name, after, limit)),
  }),
}));

builder.mutationFields((t) => ({
  createList: t.field({
    type: List,
    errors: {},
    args: { title: t.arg.string({ required: true }), public: t.arg.boolean() },
    resolve: (_root, args, ctx) => lists.createList(ctx, { title: args.title, public: args.public ?? undefined }),
  }),
  updateList: t.field({
    type: List,
    errors: {},
    args: { id: t.arg.id({ required: true }), title: t.arg.string(), public: t.arg.boolean() },
    resolve: (_root, args, ctx) =>
      lists.updateList(ctx, args.id.toString(), { title: args.title ?? undefined, public: args.public ?? undefined }),
  }),
  assignToList: t.idList({
    errors: {},
    description: "Add accounts (at most 30, all or none); returns their ids.",
    args: { id: t.arg.id({ required: true }), accountIds: t.arg.idList({ required: true }) },
    resolve: async (_root, args, ctx) =>
      (await lists.assign(ctx, args.id.toString(), args.accountIds.map(String))).map(String),
  }),
  removeFromList: t.boolean({
    errors: {},
    args: { id: t.arg.id({ required: true }), accountIds: t.arg.idList({ required: true }) },
    resolve: (_root, args, ctx) => done(lists.unassign(ctx, args.id.toString(), args.accountIds.map(String))),
  }),
  deleteList: t.boolean({
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(lists.deleteList(ctx, args.id.toString())),
  }),
}));
