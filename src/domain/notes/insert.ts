// New notes' rows, written by one statement however many notes (docs/notes.md#create): the
// notes, their attachments, their notices and mentions, the search outbox, the federation outbox
// and each author's counter. Notes posted side by side in one process go together (KeyedBatches):
// a statement of one note paid PostgreSQL's fixed costs of a statement (its plan started, its
// triggers set up, its commit and flush) for one note (bench/README.md, "Notes in one statement").
import { Prisma, queryRows } from "../../db/client.ts";
import { KeyedBatches, perClient } from "../../db/keyed-writes.ts";
import { unplannedArray } from "../../db/one-of.ts";
import type { Account, Note } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";
import { WAKES_LIVE_SQL } from "../live/wake.ts";
import { type NotificationInput, notifiableSql } from "../notifications/notify.ts";
import { searchIndexedSql } from "../search/outbox.ts";
import type { NoteOutboxRow } from "./federation.ts";

/** A note to write, with the ids of what it causes minted. */
export interface NewNote {
  row: Omit<Note, "createdAt">;
  /** The attached drive files' ids, in order. */
  fileIds: bigint[];
  /** Notifications it causes besides its mentions, each with its id. */
  notices: (NotificationInput & { id: bigint })[];
  /** The names it mentions (name keys), each with the id its notice gets if the name is an account's. */
  mentions: { key: string; noticeId: bigint }[];
  /** Its federation outbox row, when some remote server may see it. */
  federated?: NoteOutboxRow;
}

/** A note's creation time, and its author's counters as the note left them. */
export type Written = { createdAt: Date } & Pick<
  Account,
  "followersCount" | "followingCount" | "notesCount" | "updatedAt"
>;

/** At most this many notes go in one statement. */
const MOST_TOGETHER = 32;

/**
 * Each author's notes go in one lane of a process's, so that they are never in two of its
 * statements at once (each would wait for the other's lock on the author's row); notes of
 * several lanes are written side by side. The price: a note waiting for its author's row (held
 * by a batch of an account deletion that moves the author's counters) holds up the notes of its
 * lane in this process, a quarter of the authors, until that batch commits.
 */
const LANES = 4;

const noteWrites = perClient(
  (db) =>
    new KeyedBatches<{ services: Services; note: NewNote }, Written | undefined>(async (batch) => {
      const notes = batch.map((b) => b.note);
      return answers(notes, await queryRows(db, notesStatement(batch[0].services, notes)));
    }, MOST_TOGETHER),
);

/**
 * Writes `note`, all or nothing: through `tx` when given (alone, in that transaction), else in one
 * statement with those of this process that come while one of its lane is written. A note that
 * fails among others (a file or note it names deleted meanwhile, its author deleted) is written
 * again alone, to its own error. Undefined when its author has no row.
 */
export async function insertNote(
  services: Services,
  note: NewNote,
  tx?: Prisma.TransactionClient,
): Promise<Written | undefined> {
  if (tx) return answers([note], await queryRows(tx, notesStatement(services, [note])))[0];
  return noteWrites(services.db).run(String(note.row.authorId % BigInt(LANES)), { services, note });
}

/**
 * Each note's row of the statement's, in their order, its author's count as the note left it:
 * the statement's rows hold the count after all of its author's notes in it, which went in order.
 */
function answers(notes: NewNote[], rows: (Written & { id: bigint })[]): (Written | undefined)[] {
  const byId = new Map(rows.map(({ id, ...written }) => [id, written]));
  const after = new Map<bigint, number>();
  for (const n of notes) after.set(n.row.authorId, (after.get(n.row.authorId) ?? 0) + 1);
  return notes.map((n) => {
    const written = byId.get(n.row.id);
    if (!written) return undefined;
    const later = (after.get(n.row.authorId) as number) - 1;
    after.set(n.row.authorId, later);
    return { ...written, notesCount: written.notesCount - later };
  });
}

/**
 * The statement writing `notes`, each note's Written a row with its id. Every value is in an
 * array the planner does not see (unplannedArray): one generic plan however many notes; a part no
 * note needs is left out of its text (an INSERT into notifications runs that table's statement
 * trigger even for no rows).
 *
 * Each author's counter is updated first and the notes from it: the notes' trigger
 * (refuse_deleted_author) then takes its lock on the account row on the version this statement
 * wrote (taken first, each note of one author took that lock on the row another's counter was
 * waiting to update, and each update wrote a MultiXact of both). Several authors' rows are locked
 * in the order of their ids first: two processes' statements naming the same authors wait for
 * each other rather than deadlock.
 */
function notesStatement(services: Pick<Services, "config">, notes: NewNote[]): Prisma.Sql {
  const bigints = (values: (bigint | null)[]) => unplannedArray(values, "bigint");
  const texts = (values: (string | null)[]) => unplannedArray(values, "text");
  const rows = notes.map((n) => n.row);
  // One author's row needs no order to be locked in.
  const locked = new Set(rows.map((r) => r.authorId)).size > 1;
  const files = notes.flatMap((n) => n.fileIds.map((fileId, position) => ({ noteId: n.row.id, fileId, position })));
  const attached = files.length
    ? Prisma.sql`, attached AS (
      INSERT INTO note_attachments (note_id, position, file_id)
      SELECT * FROM unnest(${bigints(files.map((f) => f.noteId))}, ${unplannedArray(
        files.map((f) => f.position),
        "int",
      )},
        ${bigints(files.map((f) => f.fileId))})
    )`
    : Prisma.empty;
  const notices = notes.flatMap((n) => n.notices);
  const mentions = notes.flatMap((n) => n.mentions.map((m) => ({ ...m, noteId: n.row.id, authorId: n.row.authorId })));
  const sources = [
    ...(notices.length
      ? [
          Prisma.sql`SELECT n.id, n.recipient_id, n.type::"NotificationType", n.actor_id, n.note_id, n.content
      FROM unnest(${bigints(notices.map((n) => n.id))}, ${bigints(notices.map((n) => n.recipientId))},
        ${texts(notices.map((n) => n.type))}, ${bigints(notices.map((n) => n.actorId))},
        ${bigints(notices.map((n) => n.noteId ?? null))}, ${texts(notices.map((n) => n.content ?? null))})
        AS n(id, recipient_id, type, actor_id, note_id, content)
      WHERE ${notifiableSql(Prisma.sql`n.recipient_id`, Prisma.sql`n.actor_id`)}`,
        ]
      : []),
    ...(mentions.length
      ? [
          Prisma.sql`SELECT named.id, a.id, 'mentioned'::"NotificationType", named.author_id, named.note_id, NULL::text
      FROM unnest(${bigints(mentions.map((m) => m.noticeId))}, ${texts(mentions.map((m) => m.key))},
        ${bigints(mentions.map((m) => m.authorId))}, ${bigints(mentions.map((m) => m.noteId))})
        AS named(id, name_key, author_id, note_id)
      JOIN accounts a ON a.name_key = named.name_key
      WHERE a.deleted_at IS NULL AND ${notifiableSql(Prisma.sql`a.id`, Prisma.sql`named.author_id`)}`,
        ]
      : []),
  ];
  const notified = sources.length
    ? Prisma.sql`, notified AS (
      INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content)
      ${Prisma.join(sources, " UNION ALL ")}
    )`
    : Prisma.empty;
  const outbox = notes.flatMap((n) => (n.federated ? [{ ...n.federated, noteId: n.row.id }] : []));
  // Written only with its note, and one that needs a remote follower only when its sender has one
  // (one probe of follows_remote_followers_idx).
  const federated = outbox.length
    ? Prisma.sql`, federated AS (
      INSERT INTO federation_outbox (kind, sender, recipient, activity_id, object_id, recipients)
      SELECT f.kind, f.sender, f.recipient, f.activity_id, f.object_id, f.recipients::bigint[]
      FROM unnest(${bigints(outbox.map((f) => f.noteId))}, ${texts(outbox.map((f) => f.kind))},
        ${bigints(outbox.map((f) => f.sender))}, ${bigints(outbox.map((f) => f.recipient))},
        ${texts(outbox.map((f) => f.activityId))}, ${texts(outbox.map((f) => f.objectId))},
        ${texts(outbox.map((f) => `{${f.recipients.join(",")}}`))}, ${unplannedArray(
          outbox.map((f) => f.whenFollowed),
          "boolean",
        )})
        AS f(note_id, kind, sender, recipient, activity_id, object_id, recipients, when_followed)
      JOIN note ON note.id = f.note_id
      WHERE NOT f.when_followed
        OR EXISTS (SELECT FROM follows fo WHERE fo.followee_id = f.sender AND fo.remote_follower)
    )`
    : Prisma.empty;
  return Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${bigints(rows.map((r) => r.id))}, ${bigints(rows.map((r) => r.authorId))},
        ${texts(rows.map((r) => r.content))}, ${texts(rows.map((r) => r.cwComment))},
        ${texts(rows.map((r) => r.visibility))}, ${bigints(rows.map((r) => r.sendToId))},
        ${bigints(rows.map((r) => r.renoteId))}, ${bigints(rows.map((r) => r.replyToId))})
        WITH ORDINALITY AS i (id, author_id, content, cw_comment, visibility, send_to_id, renote_id, reply_to_id, ord)
    )${
      locked
        ? Prisma.sql`, authors AS MATERIALIZED (
      SELECT a.id FROM accounts a WHERE a.id IN (SELECT author_id FROM input) ORDER BY a.id FOR NO KEY UPDATE
    )`
        : Prisma.empty
    }, counted AS (
      UPDATE accounts a SET notes_count = a.notes_count + c.n
      FROM (SELECT author_id, count(*)::int AS n FROM input GROUP BY author_id) c
      WHERE a.id = c.author_id ${locked ? Prisma.sql`AND a.id IN (SELECT id FROM authors)` : Prisma.empty}
        AND ${WAKES_LIVE_SQL}
      RETURNING a.id, a.followers_count, a.following_count, a.notes_count, a.updated_at
    ), note AS (
      INSERT INTO notes (id, author_id, content, cw_comment, visibility, send_to_id, renote_id, reply_to_id)
      SELECT i.id, i.author_id, i.content, i.cw_comment, i.visibility::"Visibility", i.send_to_id, i.renote_id,
        i.reply_to_id
      FROM input i JOIN counted c ON c.id = i.author_id
      RETURNING id, author_id, created_at
    )${attached}${notified}, indexed AS (
      INSERT INTO search_outbox (op, target_id) SELECT 'upsert', i.id FROM input i WHERE ${searchIndexedSql(services)}
    )${federated}
    SELECT note.id, note.created_at AS "createdAt", c.followers_count AS "followersCount",
      c.following_count AS "followingCount", c.notes_count AS "notesCount", c.updated_at AS "updatedAt"
    FROM note JOIN counted c ON c.id = note.author_id`;
}
