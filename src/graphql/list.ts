// Lists: their members, and the list queries and mutations.
import * as lists from "../domain/lists/service.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";

const List = builder.objectRef<lists.ListView>("List").implement({
  description: "A list of accounts. Private lists are their owner's alone.",
  fields: (t) => ({
    id: t.id({ resolve: (l) => l.id.toString() }),
    title: t.exposeString("title"),
    public: t.exposeBoolean("public"),
    assignees: t.field({
      type: [AccountRef],
      description: `At most ${lists.ASSIGNEES_SHOWN}, by account id newest first (REST's GET /lists/{id}/assignees pages them all).`,
      resolve: (l) => l.assignees.map((m) => m.account),
    }),
    assigneeCount: t.int({ description: "How many accounts the list has.", resolve: (l) => l._count.assignees }),
  }),
});

builder.queryFields((t) => ({
  list: t.field({
    type: List,
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => lists.getList(ctx, args.id.toString()),
  }),
  listsOf: t.field({
    type: [List],
    errors: {},
    description: "The lists an account owns that the caller may see.",
    args: { name: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => lists.listsOf(ctx, args.name),
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
