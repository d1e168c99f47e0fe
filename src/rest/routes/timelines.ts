// Routes of timelines and conversations (docs/timelines.md#timelines).
import { z } from "zod";
import type { Context } from "../../domain/context.ts";
import type { NoteView } from "../../domain/notes/service.ts";
import type { TimelineQuery } from "../../domain/timelines/page.ts";
import * as timelines from "../../domain/timelines/service.ts";
import * as field from "../fields.ts";
import { queryBoolean, querySnowflake } from "../query.ts";
import { route } from "../route.ts";
import { FullNoteShape, fullNoteView } from "../views/note.ts";
import { type FullNoteJson, fullNotesArray, fullNotesJson } from "../views/note-sql.ts";
import { ConversationEntryShape, conversationEntryView } from "../views/notification.ts";

export const timelineQuery = z.object({
  has_attachment: queryBoolean.optional(),
  no_nsfw: queryBoolean.optional(),
  before_id: querySnowflake.optional(),
});
/** The global timeline's: `federated=true` adds the remote public notes known here (docs/federation.md). */
const globalTimelineQuery = timelineQuery.extend({ federated: queryBoolean.optional() });
export const toTimelineQuery = (q: z.infer<typeof timelineQuery> & { federated?: boolean }): TimelineQuery => ({
  beforeId: q.before_id,
  hasAttachment: q.has_attachment,
  noNsfw: q.no_nsfw,
  federated: q.federated,
});
export const NotesAnswer = {
  status: 200,
  description: "notes, newest first",
  schema: z.array(FullNoteShape),
};
export const notesReply = (notes: NoteView[], ctx: Context) => ({
  status: 200,
  body: notes.map((n) => fullNoteView(ctx, n)),
});
/** Notes PostgreSQL wrote as JSON (fullNotesJson), answered as they came. */
export const notesJsonReply = (notes: FullNoteJson[]) => ({
  status: 200,
  headers: { "content-type": "application/json; charset=utf-8" },
  body: fullNotesArray(notes),
});

function timelineRoute(path: string, fixedType?: "home") {
  return route({
    method: "GET",
    path,
    // `/timeline` is the home timeline by another path: a client calls each by its own name.
    operationId: fixedType ? "getHomeTimeline" : "getTimeline",
    readsFrom: "replica",
    summary: fixedType ? "The home timeline (as /timeline/home)" : "The home or global timeline, 20 notes a page",
    tag: "timelines",
    // The global timeline is public; the home timeline needs credentials, so this path answers
    // the credential failures of a required route as well.
    auth: "public",
    params: fixedType ? undefined : z.object({ timeline_type: field.timelineType }),
    query: fixedType ? timelineQuery : globalTimelineQuery,
    success: NotesAnswer,
    errors: ["NOTHING_LEFT", "INVALID_TIMELINE_TYPE", "UNAUTHORIZED", "YOU_ARE_FROZEN"],
    run: (ctx, { params, query }) =>
      timelines.timeline(
        ctx,
        fixedType ?? (params as { timeline_type: string }).timeline_type,
        toTimelineQuery(query),
        fullNotesJson,
      ),
    reply: notesJsonReply,
  });
}

export const timelineRoutes = [
  timelineRoute("/timeline", "home"),
  timelineRoute("/timeline/:timeline_type"),
  route({
    method: "GET",
    path: "/timeline/accounts/:account_name",
    operationId: "getAccountTimeline",
    readsFrom: "replica",
    summary: "An account's notes the caller may see (by id or name)",
    tag: "timelines",
    auth: "public",
    params: z.object({ account_name: field.accountRef }),
    query: timelineQuery,
    success: NotesAnswer,
    errors: ["NOTHING_LEFT", "YOU_ARE_BLOCKED", "ACCOUNT_NOT_FOUND"],
    overrides: { YOU_ARE_BLOCKED: 403 },
    run: (ctx, { params, query }) =>
      timelines.accountTimeline(ctx, params.account_name, toTimelineQuery(query), fullNotesJson),
    reply: notesJsonReply,
  }),
  route({
    method: "GET",
    path: "/timeline/conversations",
    operationId: "getConversations",
    summary: `The accounts the caller exchanged direct notes with, most recent first, ${timelines.CONVERSATIONS_PAGE} a page (before_id: extension, an entry's lastNoteId)`,
    tag: "timelines",
    auth: "required",
    query: z.object({ before_id: querySnowflake.optional() }),
    success: {
      status: 200,
      description: "conversation entries",
      schema: z.array(ConversationEntryShape).max(timelines.CONVERSATIONS_PAGE),
    },
    errors: ["NOTHING_LEFT"],
    run: (ctx, { query }) => timelines.conversations(ctx, { beforeId: query.before_id }),
    reply: (list, ctx) => ({ status: 200, body: list.map((c) => conversationEntryView(ctx, c)) }),
  }),
  route({
    method: "GET",
    path: "/timeline/conversations/:account_id",
    operationId: "getConversation",
    summary: "The direct notes between the caller and an account",
    tag: "timelines",
    auth: "required",
    params: z.object({ account_id: field.accountRef }),
    query: z.object({ before_id: querySnowflake.optional() }),
    success: NotesAnswer,
    errors: ["NOTHING_LEFT", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, query }) => timelines.conversation(ctx, params.account_id, { beforeId: query.before_id }),
    reply: notesReply,
  }),
];
