// Notes of other servers (docs/federation.md#notes, "Remote notes received"): written as rows of
// `notes` by their remote author, under a local snowflake id, with `uri` their ActivityPub id (an
// Announce's id for a renote). What ActivityPub says is read in src/federation/remote-notes.ts;
// this is what it writes, under the rules local notes follow: the author's notes_count moves with
// its rows, only those who may see a note hear of its mentions, a plain renote goes with its note.
import { Prisma, queryRows } from "../../db/client.ts";
import { LISTED } from "../../db/one-of.ts";
import type { Visibility } from "../../generated/prisma/client.ts";
import type { Services } from "../context.ts";
import { followsActorSql, silencedAccount } from "../instances/silence.ts";
import { WAKES_LIVE_SQL, wakeLiveHubs } from "../live/wake.ts";
import { notifiableSql } from "../notifications/notify.ts";
import { rememberOvertaken, storingHeldSql } from "../overtaken.ts";
import { recordSearchChange, searchIndexedSql } from "../search/outbox.ts";
import { LIMITS, PLAIN_RENOTE, removeNotes } from "./service.ts";

export interface RemoteNote {
  /** Its ActivityPub id (the Announce's for a renote). */
  uri: string;
  /** Its page on its server. */
  url: string | null;
  authorId: bigint;
  /** Plain text, within the local limits (the caller cuts it). */
  content: string;
  cwComment: string;
  visibility: Visibility;
  /** A direct note's local recipient. */
  sendToId: bigint | null;
  replyToId: bigint | null;
  renoteId: bigint | null;
  /** The local accounts it mentions (bounded by the caller). */
  mentionedIds: bigint[];
  /** Its files, in order (at most LIMITS.attachments): kept at their origin, not copied. */
  attachments: RemoteFile[];
}

export interface RemoteFile {
  url: string;
  name: string;
  mime: string;
  blurhash: string;
  nsfw: boolean;
}

/**
 * Writes `note` once: a second copy (an activity sent again, a Create after the note was fetched
 * as a reply's parent) finds the row by its unique `uri` and writes nothing, so the author's
 * counter, the mention notices and the renote notice are written with the row or not at all (one
 * statement). The id of the stored row, or null when what it refers to was deleted meanwhile, or
 * when it is a silenced server's direct note to a local account that does not follow its author.
 */
export async function storeRemoteNote(services: Services, note: RemoteNote): Promise<bigint | null> {
  // A silenced server's account is heard only by its followers (docs/federation.md#moderation).
  const silenced = await silencedAccount(services, note.authorId);
  if (silenced && note.visibility === "direct" && note.sendToId !== null) {
    const heard = await services.db.follow.count({ where: { followerId: note.sendToId, followeeId: note.authorId } });
    if (!heard) return null;
  }
  const heardBy = (recipient: Prisma.Sql) =>
    silenced ? Prisma.sql`AND ${followsActorSql(recipient, note.authorId)}` : Prisma.empty;
  const id = services.ids.next();
  const mentioned = note.mentionedIds.filter((m) => note.visibility !== "direct" || m === note.sendToId);
  const noticeIds = mentioned.map(() => services.ids.next());
  const files = note.attachments.slice(0, LIMITS.attachments);
  const fileIds = files.map(() => services.ids.next());
  // Each a drive file of the author's whose URL is its origin's (size unknown: 0), attached in order.
  const attached = files.length
    ? Prisma.sql`, files AS (
      INSERT INTO drive_files (id, owner_id, name, mime, size, nsfw, blurhash, url)
      SELECT f.id, ${note.authorId}, f.name, f.mime, 0, f.nsfw, f.blurhash, f.url
      FROM unnest(${fileIds}::bigint[], ${files.map((f) => f.name)}::text[], ${files.map((f) => f.mime)}::text[],
        ${files.map((f) => f.nsfw)}::boolean[], ${files.map((f) => f.blurhash)}::text[], ${files.map((f) => f.url)}::text[])
        AS f(id, name, mime, nsfw, blurhash, url)
      WHERE EXISTS (SELECT FROM note)
    ), attached AS (
      INSERT INTO note_attachments (note_id, position, file_id)
      SELECT note.id, (f.position - 1)::int, f.id FROM note, unnest(${fileIds}::bigint[]) WITH ORDINALITY AS f(id, position)
    )`
    : Prisma.empty;
  // Those mentioned in a followers-only note hear of it only when they may see it (following).
  const mayRead =
    note.visibility === "followers"
      ? Prisma.sql`AND EXISTS (SELECT FROM follows f WHERE f.follower_id = x.id AND f.followee_id = ${note.authorId})`
      : Prisma.empty;
  // The notices only when there is someone to notify (most notes taken in mention nobody here and
  // renote nothing): each INSERT into notifications ran that table's statement trigger for no
  // rows, and with their arrays in it PostgreSQL planned the statement anew at every note rather
  // than keep its generic plan (0.79 ms a note; bench/README.md, "Intake after a fan-out").
  const mentionNotices = mentioned.length
    ? Prisma.sql`, mentioned AS (
      INSERT INTO notifications (id, recipient_id, type, actor_id, note_id)
      SELECT x.notice, x.id, 'mentioned', ${note.authorId}, ${id}
      FROM ${mentionedRows(mentioned, noticeIds)}
      JOIN accounts a ON a.id = x.id AND a.host IS NULL AND a.deleted_at IS NULL
      WHERE EXISTS (SELECT FROM note) AND ${notifiableSql(Prisma.sql`x.id`, note.authorId)} ${mayRead}
        ${heardBy(Prisma.sql`x.id`)}
    )`
    : Prisma.empty;
  const renoteNotice =
    note.renoteId !== null
      ? Prisma.sql`, renoted AS (
      INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content)
      SELECT ${services.ids.next()}, r.author_id, 'renoted', ${note.authorId}, r.id,
        CASE WHEN r.cw_comment <> '' THEN '' ELSE r.content END
      FROM notes r JOIN accounts a ON a.id = r.author_id AND a.host IS NULL
      WHERE r.id = ${note.renoteId} AND EXISTS (SELECT FROM note)
        AND ${notifiableSql(Prisma.sql`r.author_id`, note.authorId)} ${heardBy(Prisma.sql`r.author_id`)}
    )`
      : Prisma.empty;
  // Stored only under its key held (src/domain/overtaken.ts): not once its deletion came, even
  // when the deletion is handled at the same moment.
  const statement = Prisma.sql`
    WITH held AS (${storingHeldSql("deleted-note", note.uri)}), note AS (
      INSERT INTO notes (id, author_id, content, cw_comment, visibility, send_to_id, renote_id, reply_to_id, uri, url)
      SELECT ${id}, ${note.authorId}, ${note.content}, ${note.cwComment}, ${note.visibility}::"Visibility",
        ${note.sendToId}, ${note.renoteId}, ${note.replyToId}, ${note.uri}, ${note.url}
      WHERE EXISTS (SELECT FROM held)
      ON CONFLICT (uri) DO NOTHING
      RETURNING id
    ), counted AS (
      UPDATE accounts SET notes_count = notes_count + 1
      WHERE id = ${note.authorId} AND EXISTS (SELECT FROM note) AND ${WAKES_LIVE_SQL}
    )${mentionNotices}${renoteNotice}, indexed AS (
      INSERT INTO search_outbox (op, target_id) SELECT 'upsert', note.id FROM note WHERE ${searchIndexedSql(services)}
    )${attached}
    SELECT id FROM note UNION ALL SELECT id FROM notes WHERE uri = ${note.uri} AND NOT EXISTS (SELECT FROM note)`;
  try {
    const [row] = await queryRows<{ id: bigint }>(services.db, statement);
    // Written by another statement that had not committed when this one's snapshot was taken.
    if (!row)
      return (await services.db.note.findUnique({ where: { uri: note.uri }, select: { id: true } }))?.id ?? null;
    // Its journal rows were written without a NOTIFY (WAKES_LIVE_SQL), which would have made the
    // commits of the notes taken in at once wait on one another: committed now, it wakes the hubs.
    wakeLiveHubs(services.db, services.log);
    return BigInt(row.id);
  } catch (err) {
    // The parent or the renoted note was deleted since it was read: nothing to attach it to.
    if ((err as { code?: string }).code === "23503") return null;
    throw err;
  }
}

/**
 * The mentioned accounts and their notices' ids as rows `x(id, notice)`: a few (LISTED) as rows
 * of values, which PostgreSQL counts as they are, so that it keeps the named statement's generic
 * plan; arrays it takes for 100 rows, and it planned the note's statement anew at every note that
 * mentions someone here (src/db/one-of.ts; bench/README.md, "Note creation's plans").
 */
function mentionedRows(mentioned: bigint[], noticeIds: bigint[]): Prisma.Sql {
  if (mentioned.length > LISTED)
    return Prisma.sql`unnest(${mentioned}::bigint[], ${noticeIds}::bigint[]) AS x(id, notice)`;
  const rows = mentioned.map((id, i) => Prisma.sql`(${id}::bigint, ${noticeIds[i]}::bigint)`);
  return Prisma.sql`(VALUES ${Prisma.join(rows)}) AS x(id, notice)`;
}

/** The stored id of remote note (or renote) `uri` by `authorUri`'s account, if any. */
async function ownNote(services: Services, authorUri: string, uri: string) {
  return services.db.note.findFirst({ where: { uri, author: { uri: authorUri } }, select: { id: true } });
}

/** Its author's edit of remote note `uri` (an Update): anyone else's changes nothing. */
export async function updateRemoteNote(
  services: Services,
  authorUri: string,
  uri: string,
  edit: { content: string; cwComment: string },
): Promise<boolean> {
  const note = await ownNote(services, authorUri, uri);
  if (!note) return false;
  await services.db.$transaction(async (tx) => {
    await tx.note.update({ where: { id: note.id }, data: edit });
    await recordSearchChange(services, tx, "upsert", [note.id]);
  });
  return true;
}

/**
 * Its author's deletion of remote note `uri` (a Delete; an Undo of its Announce for a renote): its
 * plain renotes go with it, as a local note's do, and each author's counter drops by its notes that
 * go. Anyone else's changes nothing. With `remember`, the deletion is remembered first
 * (src/domain/overtaken.ts), so that the note, come late or being stored at this moment, is not
 * there once this returns.
 */
export async function deleteRemoteNote(
  services: Services,
  authorUri: string,
  uri: string,
  { remember = false } = {},
): Promise<boolean> {
  if (remember) await rememberOvertaken(services.db, "deleted-note", new URL(uri));
  const note = await ownNote(services, authorUri, uri);
  if (!note) return false;
  return services.db.$transaction(async (tx) => {
    // Locked first: a copy of the deletion handled at once waits, then finds nothing.
    const locked = await tx.$queryRaw<{ id: bigint }[]>`SELECT id FROM notes WHERE id = ${note.id} FOR UPDATE`;
    if (locked.length === 0) return false;
    const plainRenotes = await tx.note.findMany({
      where: { ...PLAIN_RENOTE, renoteId: note.id },
      select: { id: true },
    });
    const gone = [note.id, ...plainRenotes.map((n) => n.id)];
    // Its remote files were its alone (stored with it): they go too.
    await tx.$executeRaw`
      DELETE FROM drive_files f USING note_attachments x
      WHERE x.note_id = ${note.id} AND f.id = x.file_id AND f.url IS NOT NULL`;
    await removeNotes(services, tx, gone);
    return true;
  });
}
