// Timelines as Relay-style connections (cursor = note id), and conversations, calling the same
// services as REST. A page asks the service for one note more than `first` to know whether
// there is a next page.

import * as lists from "../domain/lists/service.ts";
import type { NoteView } from "../domain/notes/service.ts";
import { PAGE, type TimelineQuery } from "../domain/timelines/page.ts";
import * as timelines from "../domain/timelines/service.ts";
import { AccountRef } from "./account.ts";
import { builder } from "./builder.ts";
import { NoteRef } from "./note.ts";

interface Connection {
  notes: NoteView[];
  hasNextPage: boolean;
}

const NoteEdge = builder.objectRef<NoteView>("NoteEdge").implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (n) => n.id.toString() }),
    node: t.field({ type: NoteRef, resolve: (n) => n }),
  }),
});

const PageInfo = builder.objectRef<Connection>("PageInfo").implement({
  fields: (t) => ({
    hasNextPage: t.exposeBoolean("hasNextPage"),
    endCursor: t.string({ nullable: true, resolve: (c) => c.notes.at(-1)?.id.toString() ?? null }),
  }),
});

export const NoteConnection = builder.objectRef<Connection>("NoteConnection").implement({
  description: "A page of notes, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
  fields: (t) => ({
    edges: t.field({ type: [NoteEdge], resolve: (c) => c.notes }),
    pageInfo: t.field({ type: PageInfo, resolve: (c) => c }),
  }),
});

interface PageArgs {
  first?: number | null;
  after?: string | null;
  hasAttachment?: boolean | null;
  noNsfw?: boolean | null;
}

/** Runs a timeline service for one connection page. */
async function connection(args: PageArgs, load: (query: TimelineQuery) => Promise<NoteView[]>): Promise<Connection> {
  const first = Math.min(Math.max(args.first ?? PAGE, 1), PAGE);
  const notes = await load({
    beforeId: args.after ?? undefined,
    hasAttachment: args.hasAttachment ?? undefined,
    noNsfw: args.noNsfw ?? undefined,
    limit: first + 1,
  });
  return { notes: notes.slice(0, first), hasNextPage: notes.length > first };
}

const Conversation = builder.objectRef<timelines.Conversation>("Conversation").implement({
  fields: (t) => ({
    account: t.field({ type: AccountRef, resolve: (c) => c.account }),
    updatedAt: t.string({ resolve: (c) => c.updatedAt.toISOString() }),
  }),
});

builder.queryFields((t) => {
  const pageArgs = {
    first: t.arg.int({ description: "1 to 20, default 20" }),
    after: t.arg.string({ description: "A cursor (note id): notes older than it" }),
    hasAttachment: t.arg.boolean(),
    noNsfw: t.arg.boolean(),
  };
  return {
    homeTimeline: t.field({
      type: NoteConnection,
      errors: {},
      args: pageArgs,
      resolve: (_root, args, ctx) => connection(args, (q) => timelines.timeline(ctx, "home", q)),
    }),
    globalTimeline: t.field({
      type: NoteConnection,
      errors: {},
      args: pageArgs,
      resolve: (_root, args, ctx) => connection(args, (q) => timelines.timeline(ctx, "global", q)),
    }),
    accountTimeline: t.field({
      type: NoteConnection,
      errors: {},
      args: { name: t.arg.string({ required: true }), ...pageArgs },
      resolve: (_root, args, ctx) => connection(args, (q) => timelines.accountTimeline(ctx, args.name, q)),
    }),
    listTimeline: t.field({
      type: NoteConnection,
      errors: {},
      args: { listId: t.arg.id({ required: true }), ...pageArgs },
      resolve: (_root, args, ctx) => connection(args, (q) => lists.listNotes(ctx, args.listId.toString(), q)),
    }),
    conversation: t.field({
      type: NoteConnection,
      errors: {},
      description: "The direct notes between the caller and an account.",
      args: { name: t.arg.string({ required: true }), first: pageArgs.first, after: pageArgs.after },
      resolve: (_root, args, ctx) => connection(args, (q) => timelines.conversation(ctx, args.name, q)),
    }),
    conversations: t.field({
      type: [Conversation],
      errors: {},
      description: "The accounts the caller exchanged direct notes with, most recent first.",
      resolve: (_root, _args, ctx) => timelines.conversations(ctx),
    }),
  };
});
