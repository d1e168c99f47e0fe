// Routes of timelines and conversations (spec 4.6; CONTRACT 6).
import { z } from "zod";
import { qualifiedNameOf } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import { fileUrl } from "../../domain/drive/urls.ts";
import type { NoteView } from "../../domain/notes/service.ts";
import type { TimelineQuery } from "../../domain/timelines/page.ts";
import * as timelines from "../../domain/timelines/service.ts";
import { route } from "../route.ts";
import { noteView } from "../views.ts";

const flag = z.enum(["true", "false"]).transform((v) => v === "true");
export const timelineQuery = z.object({
  has_attachment: flag.optional(),
  no_nsfw: flag.optional(),
  before_id: z.string().optional(),
});
export const toTimelineQuery = (q: z.infer<typeof timelineQuery>): TimelineQuery => ({
  beforeId: q.before_id,
  hasAttachment: q.has_attachment,
  noNsfw: q.no_nsfw,
});
export const notesReply = (notes: NoteView[], ctx: Context) => ({
  status: 200,
  body: notes.map((n) => noteView(ctx, n, true)),
});
const NotesShape = z.array(z.object({ id: z.string(), content: z.string() }).loose());
const PAGE_ERRORS = ["INVALID_REQUEST", "NOTHING_LEFT"] as const;

function timelineRoute(path: string, fixedType?: "home") {
  return route({
    method: "GET",
    path,
    summary: fixedType ? "The home timeline (as /timeline/home)" : "The home or global timeline, 20 notes a page",
    tag: "timelines",
    auth: "public",
    params: fixedType ? undefined : z.object({ timeline_type: z.string() }),
    query: timelineQuery,
    success: { status: 200, description: "notes, newest first", schema: NotesShape },
    errors: [...PAGE_ERRORS, "INVALID_TIMELINE_TYPE", "UNAUTHORIZED"],
    run: (ctx, { params, query }) =>
      timelines.timeline(ctx, fixedType ?? (params as { timeline_type: string }).timeline_type, toTimelineQuery(query)),
    reply: notesReply,
  });
}

export const timelineRoutes = [
  timelineRoute("/timeline", "home"),
  timelineRoute("/timeline/:timeline_type"),
  route({
    method: "GET",
    path: "/timeline/accounts/:account_name",
    summary: "An account's notes the caller may see (by id or name)",
    tag: "timelines",
    auth: "public",
    params: z.object({ account_name: z.string() }),
    query: timelineQuery,
    success: { status: 200, description: "notes, newest first", schema: NotesShape },
    errors: [...PAGE_ERRORS, "YOU_ARE_BLOCKED", "ACCOUNT_NOT_FOUND"],
    overrides: { YOU_ARE_BLOCKED: 403 },
    run: (ctx, { params, query }) => timelines.accountTimeline(ctx, params.account_name, toTimelineQuery(query)),
    reply: notesReply,
  }),
  route({
    method: "GET",
    path: "/timeline/conversations",
    summary: "The accounts the caller exchanged direct notes with, most recent first",
    tag: "timelines",
    auth: "required",
    success: { status: 200, description: "conversation entries" },
    errors: [],
    run: (ctx) => timelines.conversations(ctx),
    reply: (list, ctx) => ({
      status: 200,
      body: list.map(({ account, updatedAt }) => ({
        account: {
          accountId: account.id.toString(),
          accountName: qualifiedNameOf(ctx, account),
          nickname: account.nickname,
          avatar: fileUrl(ctx.config, account.avatarFileId),
        },
        updatedAt: updatedAt.toISOString(),
      })),
    }),
  }),
  route({
    method: "GET",
    path: "/timeline/conversations/:account_id",
    summary: "The direct notes between the caller and an account",
    tag: "timelines",
    auth: "required",
    params: z.object({ account_id: z.string() }),
    query: z.object({ before_id: z.string().optional() }),
    success: { status: 200, description: "notes, newest first", schema: NotesShape },
    errors: [...PAGE_ERRORS, "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, query }) => timelines.conversation(ctx, params.account_id, { beforeId: query.before_id }),
    reply: notesReply,
  }),
];
