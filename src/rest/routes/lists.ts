// Routes of lists (docs/timelines.md#lists).
import { z } from "zod";
import * as lists from "../../domain/lists/service.ts";
import * as field from "../fields.ts";
import { querySnowflake } from "../query.ts";
import { route } from "../route.ts";
import {
  AssignedShape,
  AssigneeShape,
  assigneeView,
  ListCreatedShape,
  ListShape,
  listCreatedView,
  listView,
} from "../views/list.ts";
import { fullNotesJson } from "../views/note-sql.ts";
import { NotesAnswer, notesJsonReply, timelineQuery, toTimelineQuery } from "./timelines.ts";

const listParams = z.object({ list_id: field.id("the list") });

const targetsBody = z.object({ account_id: field.listTargets });

export const listRoutes = [
  route({
    method: "POST",
    path: "/lists",
    operationId: "createList",
    summary: "Create a list (private unless `public`)",
    tag: "lists",
    auth: "required",
    body: z.object({
      title: field.listTitle,
      public: z.boolean().optional().describe("anyone may see it (default: private)"),
    }),
    success: { status: 200, description: "the list", schema: ListCreatedShape },
    errors: ["TITLE_TOO_LONG"],
    run: (ctx, { body }) => lists.createList(ctx, body),
    reply: (list, ctx) => ({ status: 200, body: listCreatedView(ctx, list) }),
  }),
  route({
    method: "PATCH",
    path: "/lists/:list_id",
    operationId: "updateList",
    summary: "Rename a list or make it public or private (its owner)",
    tag: "lists",
    auth: "required",
    params: listParams,
    body: z.object({
      title: field.listTitle.optional(),
      public: z.boolean().optional().describe("anyone may see it, or only its owner"),
    }),
    bodyRequired: true,
    success: { status: 200, description: "the list", schema: ListShape },
    errors: ["TITLE_TOO_LONG", "LIST_NOTFOUND"],
    run: (ctx, { params, body }) => lists.updateList(ctx, params.list_id, body),
    reply: (list, ctx) => ({ status: 200, body: listView(ctx, list) }),
  }),
  route({
    method: "GET",
    path: "/lists/:list_id",
    operationId: "getList",
    summary: "A public list, or one's own",
    tag: "lists",
    auth: "public",
    params: listParams,
    success: { status: 200, description: "the list", schema: ListShape },
    errors: ["LIST_NOTFOUND"],
    run: (ctx, { params }) => lists.getList(ctx, params.list_id),
    reply: (list, ctx) => ({ status: 200, body: listView(ctx, list) }),
  }),
  route({
    method: "GET",
    path: "/lists/:list_id/assignees",
    operationId: "getListAssignees",
    summary: `Every assignee of a public list, or one's own, by account id newest first, ${lists.ASSIGNEES_PAGE} a page (extension)`,
    tag: "lists",
    auth: "required",
    params: listParams,
    query: z.object({ before_id: querySnowflake.optional() }),
    success: { status: 200, description: "the assignees", schema: z.array(AssigneeShape) },
    errors: ["LIST_NOTFOUND", "NOTHING_LEFT"],
    run: (ctx, { params, query }) => lists.listAssignees(ctx, params.list_id, query.before_id),
    reply: (found, ctx) => ({ status: 200, body: found.map((m) => assigneeView(ctx, m)) }),
  }),
  route({
    method: "GET",
    path: "/lists/accounts/:account_id",
    operationId: "getAccountLists",
    summary: `The lists an account owns that the caller may see, newest first, ${lists.LISTS_PAGE} a page (before_id: extension)`,
    tag: "lists",
    auth: "required",
    params: z.object({ account_id: field.id("the account") }),
    query: z.object({ before_id: querySnowflake.optional() }),
    success: {
      status: 200,
      description: `at most ${lists.LISTS_PAGE} lists`,
      schema: z.array(ListShape).max(lists.LISTS_PAGE),
    },
    errors: ["ACCOUNT_NOT_FOUND", "NOTHING_LEFT"],
    run: (ctx, { params, query }) => lists.listsOf(ctx, params.account_id, query.before_id),
    reply: (found, ctx) => ({ status: 200, body: found.map((l) => listView(ctx, l)) }),
  }),
  route({
    method: "POST",
    path: "/lists/:list_id",
    operationId: "assignToList",
    summary: "Assign accounts (at most 30, all or none)",
    tag: "lists",
    auth: "required",
    params: listParams,
    body: targetsBody,
    success: { status: 200, description: "the assigned ids", schema: AssignedShape },
    errors: ["TOO_MANY_TARGETS", "ACCOUNT_NOT_FOUND", "LIST_NOTFOUND"],
    run: (ctx, { params, body }) => lists.assign(ctx, params.list_id, body.account_id),
    reply: (ids) => ({ status: 200, body: { account_id: ids.map(String) } }),
  }),
  route({
    method: "DELETE",
    path: "/lists/:list_id",
    operationId: "deleteListOrMembers",
    summary: "With `account_id`: remove those members; with no body or {}: delete the list",
    tag: "lists",
    auth: "required",
    params: listParams,
    body: z.object({ account_id: field.listTargets.optional().describe("the members to remove; none: the list goes") }),
    success: { status: 204, description: "done" },
    errors: ["TOO_MANY_TARGETS", "ACCOUNT_NOT_FOUND", "LIST_NOTFOUND"],
    run: (ctx, { params, body }) =>
      body.account_id === undefined
        ? lists.deleteList(ctx, params.list_id)
        : lists.unassign(ctx, params.list_id, body.account_id),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "GET",
    path: "/lists/:list_id/notes",
    operationId: "getListTimeline",
    readsFrom: "replica",
    summary: "The members' notes, 20 a page",
    tag: "lists",
    auth: "required",
    params: listParams,
    query: timelineQuery,
    success: NotesAnswer,
    errors: ["NOTHING_LEFT", "LIST_NOTFOUND"],
    run: (ctx, { params, query }) => lists.listNotes(ctx, params.list_id, toTimelineQuery(query), fullNotesJson),
    reply: notesJsonReply,
  }),
];
