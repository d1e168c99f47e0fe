// Notes, reactions and bookmarks. A Note is the service's NoteView: its author, reactions and
// attachments come loaded in a fixed number of queries, so no field makes one query per note.
import * as bookmarks from "../domain/bookmarks/service.ts";
import * as notes from "../domain/notes/service.ts";
import * as reactions from "../domain/reactions/service.ts";
import * as search from "../domain/search/service.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";
import { DriveFileRef } from "./drive.ts";

const VisibilityEnum = builder.enumType("Visibility", { values: ["public", "home", "followers", "direct"] as const });

const Reaction = builder.objectRef<notes.NoteView["reactions"][number]>("Reaction").implement({
  fields: (t) => ({
    emoji: t.exposeString("emoji", { description: "One Unicode emoji, or `<:alias:id>` of a custom emoji." }),
    reactedBy: t.id({ resolve: (r) => r.accountId.toString() }),
  }),
});

export const NoteRef = builder.objectRef<notes.NoteView>("Note").implement({
  description: "A note. Renotes and replies name their note by id; fetch it with `note` (it may be hidden).",
  fields: (t) => ({
    id: t.id({ resolve: (n) => n.id.toString() }),
    content: t.exposeString("content"),
    cwComment: t.exposeString("cwComment"),
    visibility: t.field({ type: VisibilityEnum, resolve: (n) => n.visibility }),
    sendToId: t.id({ nullable: true, resolve: (n) => n.sendToId?.toString() ?? null }),
    renoteId: t.id({ nullable: true, resolve: (n) => n.renoteId?.toString() ?? null }),
    replyToId: t.id({ nullable: true, resolve: (n) => n.replyToId?.toString() ?? null }),
    createdAt: t.string({ resolve: (n) => n.createdAt.toISOString() }),
    author: t.field({ type: AccountRef, resolve: (n) => n.author }),
    reactions: t.field({ type: [Reaction], resolve: (n) => n.reactions }),
    attachments: t.field({ type: [DriveFileRef], resolve: (n) => n.attachments.map((a) => a.file) }),
  }),
});

const NoteInput = builder.inputType("NoteInput", {
  fields: (t) => ({
    content: t.string(),
    visibility: t.string({ description: "public (default), home, followers or direct" }),
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

builder.queryFields((t) => ({
  note: t.field({
    type: NoteRef,
    errors: {},
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => notes.getNote(ctx, args.id.toString()),
  }),
  searchNotes: t.field({
    type: [NoteRef],
    errors: {},
    description: "Search notes with the query language; at most 100, newest first; `before` pages further.",
    args: { query: t.arg.string({ required: true }), before: t.arg.id() },
    resolve: (_root, args, ctx) => search.searchNotes(ctx, args.query, args.before?.toString()),
  }),
  bookmarks: t.field({
    type: [NoteRef],
    errors: {},
    description: "The caller's bookmarked notes, 20 a page, newest first.",
    args: { before: t.arg.id() },
    resolve: (_root, args, ctx) => bookmarks.listBookmarks(ctx, args.before?.toString()),
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
