// Route of search (spec 4.7; CONTRACT 8).
import { z } from "zod";
import * as search from "../../domain/search/service.ts";
import { querySnowflake } from "../query.ts";
import { route } from "../route.ts";
import { FullNoteShape } from "../views/note.ts";
import { fullNotesJson } from "../views/note-sql.ts";
import { notesJsonReply } from "./timelines.ts";

export const searchRoutes = [
  route({
    method: "GET",
    path: "/search/notes",
    readsFrom: "replica",
    summary: 'Search notes: keywords, "phrases", from:, is:renote|quote, has:link|media, OR, -, ( )',
    tag: "search",
    auth: "public",
    query: z.object({ query: z.string(), before_id: querySnowflake.optional() }),
    success: {
      status: 200,
      description: "at most 100 notes the caller may see, newest first",
      schema: z.array(FullNoteShape),
    },
    errors: ["INVALID_QUERY"],
    run: (ctx, { query }) => search.searchNotes(ctx, query.query, query.before_id, search.SEARCH_PAGE, fullNotesJson),
    reply: notesJsonReply,
  }),
];
