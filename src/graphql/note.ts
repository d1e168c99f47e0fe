// Notes, reactions and bookmarks. A Note is the service's NoteView: its author, reactions and
// attachments come loaded in a fixed number of queries, and the notes it renotes or replies to
// are loaded together for a whole page (a dataloader), so no field makes one query per note.
import type { ImplementableObjectRef } from "@pothos/core";
import type { FieldNode } from "graphql";
import { Prisma } from "../db/client.ts";
import * as bookmarks from "../domain/bookmarks/service.ts";
import * as notes from "../domain/notes/service.ts";
import * as reactions from "../domain/reactions/service.ts";
import { newestReactions, REACTIONS_SHOWN, reactionTotal } from "../domain/reactions/shown.ts";
import * as search from "../domain/search/service.ts";
import { PAGE } from "../domain/timelines/page.ts";
import { columnOf } from "../projection/field.ts";
import { NOTE, REACTION_COUNT, type ReactionCount as ReactionCountRow } from "../projection/note.ts";
import { REACTION } from "../projection/reaction.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";
import { type CompiledExtensions, no, raw, type SqlOf, scalar, selectionOf, type Walk } from "./compiled-walk.ts";
import { AFTER_DESCRIPTION, connectionType, firstDescription, page, pageComplexity } from "./connection.ts";
import { DriveFileRef } from "./drive.ts";
import { OPEN_ENUM } from "./open-enum.ts";
import { projected, projectedRelation } from "./projected.ts";

type ReactionRow = notes.NoteView["reactions"][number];

// Open (open-enum.ts): an unknown value in NoteInput reaches notes.createNote, which answers
// INVALID_VISIBILITY as REST does; the input's type says the four, the runtime value may not be.
const VisibilityEnum = builder.enumType("Visibility", {
  values: ["public", "home", "followers", "direct"] as const,
  extensions: OPEN_ENUM,
});

const Reaction = builder.objectRef<ReactionRow>("Reaction").implement({
  fields: (t) => ({
    id: t.id(projected(REACTION.id)),
    emoji: t.string({
      description: "One Unicode emoji, or `<:alias:id>` of a custom emoji.",
      ...projected(REACTION.emoji),
    }),
    reactedBy: t.id(projected(REACTION.reactedBy)),
    createdAt: t.field({ type: "DateTime", ...projected(REACTION.createdAt) }),
  }),
});

const ReactionConnection = connectionType(
  "Reaction",
  Reaction,
  "A page of a note's reactions, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

const ReactionCount = builder.objectRef<ReactionCountRow>("ReactionCount").implement({
  fields: (t) => ({ emoji: t.string(projected(REACTION_COUNT.emoji)), count: t.int(projected(REACTION_COUNT.count)) }),
});

/**
 * Note.reactions compiled (compiled-walk.ts): without `after`, `first` within the reactions a note
 * comes with, the newest `first` of them and a next page when the note has more; read from no
 * rows at all when the note has no reaction (most notes), its counts `c` (noteStatement) null.
 */
function compiledReactions(f: FieldNode, walk: Walk): SqlOf {
  let first: number | undefined;
  for (const argument of f.arguments ?? []) {
    if (argument.name.value !== "first") no();
    first = walk.intArgument(argument.value);
  }
  const limit = first ?? REACTIONS_SHOWN;
  if (!Number.isInteger(limit) || limit < 1 || limit > REACTIONS_SHOWN) no();
  const connection = walk.object(f.selectionSet, "ReactionConnection", {
    edges: (c) => {
      const edge = walk.object(selectionOf(c), "ReactionEdge", {
        cursor: scalar((r) => columnOf(r, "id::text")),
        node: (e) => walk.object(selectionOf(e), "Reaction"),
      });
      return (r, v) => Prisma.sql`COALESCE(json_agg(${edge(r, v)} ORDER BY ${columnOf(r, "id")} DESC), '[]')`;
    },
    pageInfo: (c) =>
      walk.object(selectionOf(c), "PageInfo", {
        hasNextPage: scalar(raw(`COALESCE(c.total, 0) > ${limit}`)),
        hasPreviousPage: scalar(raw("false")),
        startCursor: scalar((r) => Prisma.raw(`(array_agg(${r}.id::text ORDER BY ${r}.id DESC))[1]`)),
        endCursor: scalar((r) => Prisma.raw(`(array_agg(${r}.id::text ORDER BY ${r}.id))[1]`)),
      }),
  });
  return (t, v) =>
    Prisma.sql`(SELECT ${connection("r", v)} FROM (${newestReactions(columnOf(t, "id"), limit, Prisma.sql`c.total`)}) r)`;
}

// Declared with its type: its fields refer to it (renote, replyTo).
export const NoteRef: ImplementableObjectRef<typeof builder.$inferSchemaTypes, notes.NoteView> =
  builder.objectRef<notes.NoteView>("Note");

NoteRef.implement({
  description: "A note. A renote or reply loads its note (null when the caller may not see it).",
  fields: (t) => ({
    id: t.id(projected(NOTE.id)),
    content: t.string(projected(NOTE.content)),
    cwComment: t.string(projected(NOTE.cwComment)),
    visibility: t.field({ type: VisibilityEnum, ...projected(NOTE.visibility) }),
    sendToId: t.id({ nullable: true, ...projected(NOTE.sendToId) }),
    renoteId: t.id({ nullable: true, ...projected(NOTE.renoteId) }),
    replyToId: t.id({ nullable: true, ...projected(NOTE.replyToId) }),
    createdAt: t.field({ type: "DateTime", ...projected(NOTE.createdAt) }),
    url: t.string({
      description: "Its page: a remote note's on its server, a local note's here (PUBLIC_URL/notes/<id>).",
      ...projected(NOTE.url),
    }),
    renote: t.loadable({
      type: NoteRef,
      nullable: true,
      description: "The renoted note of a renote or quote.",
      load: (ids: bigint[], ctx) => notes.visibleNotesByIds(ctx, ids),
      resolve: (n) => n.renoteId,
    }),
    replyTo: t.loadable({
      type: NoteRef,
      nullable: true,
      description: "The note this one replies to.",
      load: (ids: bigint[], ctx) => notes.visibleNotesByIds(ctx, ids),
      resolve: (n) => n.replyToId,
    }),
    author: t.field({ type: AccountRef, ...projectedRelation(NOTE.author) }),
    reactionCount: t.int({ description: "How many reactions the note has.", ...projected(NOTE.reactionCount) }),
    reactionCounts: t.field({
      type: [ReactionCount],
      description: "How many of each emoji (an emoji nobody uses any more is absent).",
      ...projectedRelation(NOTE.reactionCountList),
    }),
    ownReaction: t.field({
      type: Reaction,
      nullable: true,
      description: "The caller's reaction to the note, if any.",
      ...projectedRelation(NOTE.ownReaction),
    }),
    reactions: t.field({
      type: ReactionConnection,
      errors: { directResult: true },
      complexity: pageComplexity(reactions.REACTIONS_PAGE, REACTIONS_SHOWN),
      description: `Every reaction, newest first. The first ${REACTIONS_SHOWN} come with the note; later pages are read on demand.`,
      extensions: { compile: compiledReactions } satisfies CompiledExtensions,
      args: {
        first: t.arg.int({ description: `1 to ${reactions.REACTIONS_PAGE}, default ${REACTIONS_SHOWN}` }),
        after: t.arg.string({ description: AFTER_DESCRIPTION }),
      },
      resolve: (n, args, ctx) => {
        const first = args.first ?? REACTIONS_SHOWN;
        if (!args.after && Number.isInteger(first) && first >= 1 && first <= REACTIONS_SHOWN)
          return { items: n.reactions.slice(0, first), hasNextPage: reactionTotal(n) > first };
        return page({ first, after: args.after }, reactions.REACTIONS_PAGE, (after, limit) =>
          reactions.listReactions(ctx, n.id.toString(), after, limit),
        );
      },
    }),
    attachments: t.field({ type: [DriveFileRef], ...projectedRelation(NOTE.attachments) }),
  }),
});

const NoteInput = builder.inputType("NoteInput", {
  fields: (t) => ({
    content: t.string(),
    visibility: t.field({
      type: VisibilityEnum,
      description: "Default: public. A value outside the enum is the INVALID_VISIBILITY result.",
    }),
    attachmentFileIds: t.idList(),
    cwComment: t.string(),
    sendTo: t.id({ description: "The addressee of a direct note: account id or name." }),
  }),
});

type NoteInputShape = typeof NoteInput.$inferInput;

function noteInput(input: NoteInputShape | null | undefined): notes.NoteInput {
  return {
    content: input?.content ?? undefined,
    visibility: input?.visibility ?? undefined,
    attachmentFileIds: input?.attachmentFileIds?.map(String),
    cwComment: input?.cwComment ?? undefined,
    sendTo: input?.sendTo?.toString(),
  };
}

export const NoteConnection = connectionType(
  "Note",
  NoteRef,
  "A page of notes, newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

builder.queryFields((t) => ({
  note: t.field({
    type: NoteRef,
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => notes.getNote(ctx, args.id.toString()),
  }),
  searchNotes: t.field({
    type: NoteConnection,
    errors: { directResult: true },
    complexity: pageComplexity(search.SEARCH_PAGE),
    description: "Search notes with the query language, newest first.",
    args: {
      query: t.arg.string({ required: true }),
      first: t.arg.int({ description: firstDescription(search.SEARCH_PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) =>
      page(args, search.SEARCH_PAGE, (after, limit) => search.searchNotes(ctx, args.query, after, limit)),
  }),
  bookmarks: t.field({
    type: NoteConnection,
    errors: { directResult: true },
    complexity: pageComplexity(PAGE),
    description: "The caller's bookmarked notes, newest first.",
    args: {
      first: t.arg.int({ description: firstDescription(PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) => page(args, PAGE, (after, limit) => bookmarks.listBookmarks(ctx, after, limit)),
  }),
}));

builder.mutationFields((t) => ({
  createNote: t.field({
    type: NoteRef,
    errors: {},
    args: { input: t.arg({ type: NoteInput, required: true }) },
    resolve: (_root, args, ctx) => notes.createNote(ctx, noteInput(args.input)),
  }),
  renote: t.field({
    type: NoteRef,
    errors: {},
    description: "Without content: a plain renote; with content: a quote.",
    args: { noteId: t.arg.id({ required: true }), input: t.arg({ type: NoteInput }) },
    resolve: (_root, args, ctx) => notes.renote(ctx, args.noteId.toString(), noteInput(args.input)),
  }),
  reply: t.field({
    type: NoteRef,
    errors: {},
    args: { noteId: t.arg.id({ required: true }), input: t.arg({ type: NoteInput, required: true }) },
    resolve: (_root, args, ctx) => notes.reply(ctx, args.noteId.toString(), noteInput(args.input)),
  }),
  deleteNote: t.boolean({
    errors: {},
    args: { noteId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(notes.deleteNote(ctx, args.noteId.toString())),
  }),
  react: t.field({
    type: NoteRef,
    errors: {},
    args: { noteId: t.arg.id({ required: true }), emoji: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => reactions.react(ctx, args.noteId.toString(), args.emoji),
  }),
  unreact: t.boolean({
    errors: {},
    args: { noteId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(reactions.unreact(ctx, args.noteId.toString())),
  }),
  bookmark: t.field({
    type: NoteRef,
    errors: {},
    args: { noteId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => bookmarks.bookmark(ctx, args.noteId.toString()),
  }),
  unbookmark: t.boolean({
    errors: {},
    args: { noteId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => done(bookmarks.unbookmark(ctx, args.noteId.toString())),
  }),
}));
