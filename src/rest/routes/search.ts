// Route of search (docs/search.md).
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
    operationId: "searchNotes",
    readsFrom: "replica",
    summary: 'Search notes: keywords, "phrases", from:, is:renote|quote, has:link|media, OR, -, ( )',
    tag: "search",
    auth: "public",
    query: z.object({
      query: z.string().meta({
        description:
          'the search, 1 to 512 characters: keywords, "phrases", from:NAME, is:renote|quote, has:link|media, ' +
          "`OR`, `-` to negate, ( ) to group; at least one keyword, phrase or from: not negated (INVALID_QUERY)",
        minLength: 1,
        maxLength: 512,
      }),
      before_id: querySnowflake.optional(),
    }),
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
