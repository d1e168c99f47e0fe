// Which GraphQL fields the compiled pages write in SQL (src/graphql/compiled-walk.ts): those that
// carry their projection or a compile of their own (src/graphql/projected.ts). A field that loses
// its projection silently sends every page selecting it to the executor; one that gains it must
// be covered by test/graphql-compiled.test.ts's differential test.
import { isObjectType } from "graphql";
import { expect, it } from "vitest";
import type { CompiledExtensions } from "../../src/graphql/compiled-walk.ts";
import { schema } from "../../src/graphql/index.ts";

it("lists the fields that compile", () => {
  const compiled: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith("__")) continue;
    for (const field of Object.values(type.getFields())) {
      const { projection, compile } = field.extensions as CompiledExtensions;
      if (projection || compile) compiled.push(`${type.name}.${field.name}${compile ? " (its own)" : ""}`);
    }
  }
  // Notification's and List's carry theirs for the renderers drawn from their projections; no
  // compiled page selects them yet.
  expect(compiled.sort()).toEqual([
    "Account.avatar",
    "Account.bio",
    "Account.email",
    "Account.followedCount",
    "Account.followingCount",
    "Account.header",
    "Account.host",
    "Account.id",
    "Account.locked",
    "Account.name",
    "Account.nickname",
    "Account.noteCount",
    "DriveFile.authorId",
    "DriveFile.hash",
    "DriveFile.id",
    "DriveFile.mime",
    "DriveFile.name",
    "DriveFile.nsfw",
    "DriveFile.size",
    "DriveFile.thumbnail",
    "DriveFile.url",
    "List.assigneeCount",
    "List.id",
    "List.public",
    "List.title",
    "NewAccount.email",
    "NewAccount.id",
    "NewAccount.name",
    "Note.attachments",
    "Note.author",
    "Note.content",
    "Note.createdAt",
    "Note.cwComment",
    "Note.id",
    "Note.ownReaction",
    "Note.reactionCount",
    "Note.reactionCounts",
    "Note.reactions (its own)",
    "Note.renoteId",
    "Note.replyToId",
    "Note.sendToId",
    "Note.url",
    "Note.visibility",
    "Notification.content",
    "Notification.createdAt",
    "Notification.id",
    "Notification.listId",
    "Notification.noteId",
    "Notification.read",
    "Notification.reportId",
    "Notification.type",
    "Reaction.createdAt",
    "Reaction.emoji",
    "Reaction.id",
    "Reaction.reactedBy",
    "ReactionCount.count",
    "ReactionCount.emoji",
  ]);
});

it("leaves to the executor only the note fields that load other notes", () => {
  const note = schema.getType("Note");
  if (!isObjectType(note)) throw new Error("no Note type");
  const executors = Object.values(note.getFields())
    .filter((f) => {
      const { projection, compile } = f.extensions as CompiledExtensions;
      return !projection && !compile;
    })
    .map((f) => f.name);
  expect(executors.sort()).toEqual(["renote", "replyTo"]);
});
