// The note as every renderer draws it (field.ts): a NoteView in hand, or in SQL a notes row with
// its reaction counts, as noteStatement selects them.

import { SqlTemplate, standIn } from "../db/built-sql.ts";
import { Prisma } from "../db/client.ts";
import { unplannedArray } from "../db/one-of.ts";
import type { PublicAccount } from "../domain/accounts/service.ts";
import {
  countsByEmoji,
  type NoteReactions,
  newestReactions,
  REACTIONS_SHOWN,
  reactionTotal,
  shownReactions,
} from "../domain/reactions/shown.ts";
import type { DriveFile, Note, Reaction } from "../generated/prisma/client.ts";
import { column, columnOf, many, one, optionalSnowflake, snowflake, stored, timestamp, type Viewer } from "./field.ts";

/** One emoji's count on a note; in SQL a row (emoji, total) of the note's counts. */
export interface ReactionCount {
  emoji: string;
  count: number;
}

export const REACTION_COUNT = {
  emoji: stored<"emoji", string>("emoji", "emoji"),
  count: column(
    (c: ReactionCount) => c.count,
    (t) => columnOf(t, "total::int"),
  ),
};

type Counted = Pick<NoteReactions, "reactionCounts">;

export const NOTE = {
  id: snowflake("id", "id"),
  content: stored<"content", string>("content", "content"),
  cwComment: stored<"cwComment", string>("cwComment", "cw_comment"),
  visibility: column(
    (n: Pick<Note, "visibility">) => n.visibility,
    (t) => columnOf(t, "visibility::text"),
  ),
  /** The addressee of a direct note. */
  sendToId: optionalSnowflake("sendToId", "send_to_id"),
  /** The renoted note of a renote or quote. */
  renoteId: optionalSnowflake("renoteId", "renote_id"),
  /** The note replied to. */
  replyToId: optionalSnowflake("replyToId", "reply_to_id"),
  createdAt: timestamp("createdAt", "created_at"),
  /** Its page: a remote note's on its server (docs/federation.md), a local note's its path here. */
  url: column(
    (n: Pick<Note, "id" | "url">, viewer) => n.url ?? `${viewer.publicUrl}/notes/${n.id}`,
    (t, viewer) =>
      Prisma.sql`COALESCE(${columnOf(t, "url")}, ${`${viewer.publicUrl}/notes/`} || ${columnOf(t, "id")}::text)`,
  ),
  author: one(
    (n: { author: PublicAccount }) => n.author,
    (t, account) => Prisma.sql`(SELECT ${account("a")} FROM accounts a WHERE a.id = ${columnOf(t, "author_id")})`,
  ),
  attachments: many(
    (n: { attachments: { file: DriveFile }[] }) => n.attachments.map((a) => a.file),
    (t, file) => Prisma.sql`COALESCE((SELECT json_agg(${file("f")} ORDER BY x.position)
      FROM note_attachments x JOIN drive_files f ON f.id = x.file_id WHERE x.note_id = ${columnOf(t, "id")}), '[]')`,
  ),
  /** Its drive files' ids, in order (which may since be gone: an export's). */
  attachmentIds: column(
    (n: { attachments: { fileId: bigint }[] }) => n.attachments.map((a) => a.fileId.toString()),
    (t) => Prisma.sql`COALESCE((SELECT json_agg(x.file_id::text ORDER BY x.position)
      FROM note_attachments x WHERE x.note_id = ${columnOf(t, "id")}), '[]')`,
  ),
  /** How many reactions the note has. */
  reactionCount: column(
    (n: Counted) => reactionTotal(n),
    () => Prisma.sql`COALESCE(c.total, 0)`,
  ),
  /** How many of each emoji, as a record (an emoji nobody uses any more is absent). */
  reactionCounts: column(
    (n: Counted) => n.reactionCounts,
    () => Prisma.sql`COALESCE(c.counts, '{}')`,
  ),
  /** The same counts, a row each. */
  reactionCountList: many(
    (n: Counted): ReactionCount[] => Object.entries(n.reactionCounts).map(([emoji, count]) => ({ emoji, count })),
    (_t, count) =>
      Prisma.sql`COALESCE((SELECT json_agg(${count("e")}) FROM json_each_text(c.counts) AS e(emoji, total)), '[]')`,
  ),
  /**
   * The reactions shown with the note (docs/notes.md#bounded-reactions): the newest, the caller's
   * own in place of the oldest when it is not among them. A note without any skips the lookup.
   */
  shownReactions: many(
    (n: Pick<NoteReactions, "reactions" | "ownReaction">): Reaction[] => shownReactions(n),
    (t, reaction, v) => {
      const id = columnOf(t, "id");
      const shown = Prisma.raw(String(REACTIONS_SHOWN));
      const newest = newestReactions(id, REACTIONS_SHOWN, Prisma.sql`c.total`);
      const candidates =
        v.viewerId === undefined
          ? newest
          : Prisma.sql`SELECT c.* FROM ((${newest}) UNION
              (SELECT * FROM reactions WHERE note_id = ${id} AND account_id = ${v.viewerId})) c
            ORDER BY c.account_id = ${v.viewerId} DESC, c.id DESC LIMIT ${shown}`;
      return Prisma.sql`CASE WHEN c.total IS NULL THEN '[]'::json ELSE
        COALESCE((SELECT json_agg(${reaction("s")} ORDER BY s.id DESC) FROM (${candidates}) s), '[]') END`;
    },
  ),
  /** The caller's reaction, if any. */
  ownReaction: one(
    (n: Pick<NoteReactions, "ownReaction">) => n.ownReaction,
    (t, reaction, v) =>
      v.viewerId === undefined
        ? Prisma.sql`NULL::json`
        : Prisma.sql`(SELECT ${reaction("o")} FROM reactions o WHERE o.note_id = ${columnOf(t, "id")} AND o.account_id = ${v.viewerId})`,
  ),
};

/**
 * The statement drawing each note `page` selects (`SELECT n.* FROM notes n ...`) as `node`, by
 * `draw` of the row's alias, newest first, with its id: the note's fields above read its counts
 * from `c`, summed once (most notes have none).
 */
export function noteStatement(page: Prisma.Sql, draw: (t: string) => Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    WITH page AS (${page})
    SELECT p.id, ${draw("p")}::text AS node
    FROM page p
    LEFT JOIN LATERAL (
      SELECT sum(e.total) AS total, json_object_agg(e.emoji, e.total) AS counts
      FROM (${countsByEmoji(Prisma.sql`p.id`)}) e
    ) c ON true
    ORDER BY p.id DESC`;
}

/** The caller's account id, standing in for it while a statement's text is built. */
const CALLER = standIn("caller");
/** The callers' ids, standing in for them while a statement for many callers is built. */
const CALLERS = standIn("callers");

interface Built {
  publicUrl: string;
  localHost: string;
  /** Its values: the caller's id (or the callers'), then the page's values, in order. */
  template: SqlTemplate;
}

/** Built statements kept per drawing; texts are few (a page's text is one of a fixed set of parts). */
const BUILT_KEPT = 1_000;

/** The statements `build` makes of pages, each text built once and reused with new values. */
class PageTemplates {
  private readonly kept = new Map<string, Built>();

  constructor(
    /** The statement of a page, the caller's id (or the callers') standing in as `caller`. */
    private readonly build: (page: Prisma.Sql, viewer: Viewer) => Prisma.Sql,
    private readonly caller: bigint,
  ) {}

  statement(page: Prisma.Sql, viewer: Viewer, caller: unknown): Prisma.Sql {
    let built = this.kept.get(page.text);
    if (built === undefined || built.publicUrl !== viewer.publicUrl || built.localHost !== viewer.localHost) {
      const pageValues = page.values.map((_, i) => standIn(`page value ${i}`));
      const statement = this.build(new Prisma.Sql(page.strings, pageValues), viewer);
      built = {
        publicUrl: viewer.publicUrl,
        localHost: viewer.localHost,
        template: new SqlTemplate(statement, [this.caller, ...pageValues]),
      };
      if (this.kept.size >= BUILT_KEPT) this.kept.clear();
      this.kept.set(page.text, built);
    }
    return built.template.with([caller, ...page.values]);
  }
}

/**
 * noteStatement of `draw` for a viewer, its text built once for each page text and kind of
 * caller (with an account or none) and reused, the page's values and the caller's id put in its
 * values: the note's SQL, some 3 KB, built for every request and then hashed to name it
 * (db/client.ts) was a twentieth of get note's server CPU (bench/README.md). `draw` may use the
 * viewer's id only as a value of the statement or to test whether there is one, as the fields
 * above do: the text is built with a stand-in for it.
 */
export function noteStatements(
  draw: (t: string, viewer: Viewer) => Prisma.Sql,
): (page: Prisma.Sql, viewer: Viewer) => Prisma.Sql {
  const drawn = (viewerId: bigint | undefined) => (page: Prisma.Sql, viewer: Viewer) =>
    noteStatement(page, (t) => draw(t, { ...viewer, viewerId }));
  const withAccount = new PageTemplates(drawn(CALLER), CALLER);
  const without = new PageTemplates(drawn(undefined), CALLER);
  return (page, viewer) =>
    (viewer.viewerId === undefined ? without : withAccount).statement(page, viewer, viewer.viewerId);
}

/**
 * noteStatements for many callers with accounts at once: the statement of one caller, lateral to
 * each of `callerIds`, its rows (`caller`, the id's place in callerIds from 1; then id and node) in
 * callerIds' order. A crowd reading one note (the answers to a viral note's reactions) pays
 * PostgreSQL's fixed cost of a statement (its plan started, bench/README.md "Reactions in one
 * statement") once.
 */
export function noteStatementsForCallers(
  draw: (t: string, viewer: Viewer) => Prisma.Sql,
): (page: Prisma.Sql, viewer: Viewer, callerIds: bigint[]) => Prisma.Sql {
  const templates = new PageTemplates((page, viewer) => {
    const one = noteStatement(page, (t) => draw(t, { ...viewer, viewerId: CALLER }));
    // Each caller's id the lateral row's, not a value of the statement.
    const each = new Prisma.Sql(
      one.strings,
      one.values.map((value) => (value === CALLER ? Prisma.raw("v.caller") : value)),
    );
    return Prisma.sql`
      SELECT v.ord::int AS caller, s.id, s.node
      FROM unnest(${unplannedArray(CALLERS, "bigint")}) WITH ORDINALITY v (caller, ord), LATERAL (${each}) s
      ORDER BY v.ord, s.id DESC`;
  }, CALLERS);
  return (page, viewer, callerIds) => templates.statement(page, viewer, callerIds);
}
