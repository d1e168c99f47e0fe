// Timelines as connections (connection.ts), and conversations, calling the same services as REST.
import * as lists from "../domain/lists/service.ts";
import type { NoteView } from "../domain/notes/service.ts";
import { PAGE, type TimelineQuery } from "../domain/timelines/page.ts";
import * as timelines from "../domain/timelines/service.ts";
import { AccountRef } from "./account.ts";
import { builder } from "./builder.ts";
import {
  AFTER_DESCRIPTION,
  connectionType,
  firstDescription,
  type PageArgs,
  page,
  pageComplexity,
} from "./connection.ts";
import { NoteConnection } from "./note.ts";

interface TimelineArgs extends PageArgs {
  hasAttachment?: boolean | null;
  noNsfw?: boolean | null;
}

/** Runs a timeline service for one connection page. */
function timelinePage(args: TimelineArgs, load: (query: TimelineQuery) => Promise<NoteView[]>) {
  return page(args, PAGE, (after, limit) =>
    load({
      beforeId: after,
      hasAttachment: args.hasAttachment ?? undefined,
      noNsfw: args.noNsfw ?? undefined,
      limit,
    }),
  );
}

/** A conversation entry with its cursor: the newest direct note between the two. */
type ConversationEntry = timelines.Conversation & { id: bigint };

const Conversation = builder.objectRef<ConversationEntry>("Conversation").implement({
  fields: (t) => ({
    account: t.field({ type: AccountRef, resolve: (c) => c.account }),
    updatedAt: t.field({ type: "DateTime", resolve: (c) => c.updatedAt }),
    lastNoteId: t.id({
      description: "The newest direct note between the two.",
      resolve: (c) => c.lastNoteId.toString(),
    }),
  }),
});

const ConversationConnection = connectionType(
  "Conversation",
  Conversation,
  "A page of conversations, most recent first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

/** Conversations a GraphQL page holds at most: as many as REST answers in one. */
const { CONVERSATIONS_PAGE } = timelines;

builder.queryFields((t) => {
  const args = {
    first: t.arg.int({ description: firstDescription(PAGE) }),
    after: t.arg.string({ description: AFTER_DESCRIPTION }),
    hasAttachment: t.arg.boolean(),
    noNsfw: t.arg.boolean(),
  };
  const connection = {
    type: NoteConnection,
    errors: { directResult: true },
    complexity: pageComplexity(PAGE),
  } as const;
  return {
    homeTimeline: t.field({
      ...connection,
      args,
      resolve: (_root, args, ctx) => timelinePage(args, (q) => timelines.timeline(ctx, "home", q)),
    }),
    globalTimeline: t.field({
      ...connection,
      args: {
        ...args,
        federated: t.arg.boolean({ description: "With the public notes of other servers known here." }),
      },
      resolve: (_root, args, ctx) =>
        timelinePage(args, (q) => timelines.timeline(ctx, "global", { ...q, federated: args.federated ?? false })),
    }),
    accountTimeline: t.field({
      ...connection,
      args: { name: t.arg.string({ required: true }), ...args },
      resolve: (_root, args, ctx) => timelinePage(args, (q) => timelines.accountTimeline(ctx, args.name, q)),
    }),
    listTimeline: t.field({
      ...connection,
      args: { listId: t.arg.id({ required: true }), ...args },
      resolve: (_root, args, ctx) => timelinePage(args, (q) => lists.listNotes(ctx, args.listId.toString(), q)),
    }),
    conversation: t.field({
      ...connection,
      description: "The direct notes between the caller and an account.",
      args: { name: t.arg.string({ required: true }), first: args.first, after: args.after },
      resolve: (_root, args, ctx) => timelinePage(args, (q) => timelines.conversation(ctx, args.name, q)),
    }),
    conversations: t.field({
      type: ConversationConnection,
      errors: { directResult: true },
      complexity: pageComplexity(CONVERSATIONS_PAGE),
      description: "The accounts the caller exchanged direct notes with, most recent exchange first.",
      args: {
        first: t.arg.int({ description: firstDescription(CONVERSATIONS_PAGE) }),
        after: t.arg.string({ description: AFTER_DESCRIPTION }),
      },
      resolve: (_root, args, ctx) =>
        page(args, CONVERSATIONS_PAGE, async (after, limit) =>
          (await timelines.conversations(ctx, { beforeId: after, limit })).map((c) => ({ ...c, id: c.lastNoteId })),
        ),
    }),
  };
});
