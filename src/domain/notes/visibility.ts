// Who may see a note (docs/notes.md#visibility): the one rule every reader of notes applies, as a
// filter. public and home: anyone; followers: the author and accepted followers; direct: the author
// and the addressee. A frozen author's notes are seen by moderators only; a deleted author's
// (frozen too, docs/accounts.md#deletion) by nobody.
import { Prisma } from "../../db/client.ts";
import type { Account, Visibility } from "../../generated/prisma/client.ts";
import { isModerator } from "../sessions/caller.ts";

const OPEN: Visibility[] = ["public", "home"];

/** Whether a note of a non-frozen author with this visibility is seen by everyone. */
export function visibleToEveryone(visibility: Visibility): boolean {
  return OPEN.includes(visibility);
}

export function visibleTo(viewer: Pick<Account, "id" | "role"> | undefined): Prisma.NoteWhereInput {
  const audience: Prisma.NoteWhereInput[] = [{ visibility: { in: OPEN } }];
  if (viewer) {
    audience.push(
      { authorId: viewer.id },
      { visibility: "followers", author: { followers: { some: { followerId: viewer.id } } } },
      { visibility: "direct", sendToId: viewer.id },
    );
  }
  const moderator = viewer !== undefined && isModerator(viewer);
  return moderator
    ? { AND: [{ OR: audience }, { author: { deletedAt: null } }] }
    : { AND: [{ OR: audience }, { author: { frozen: false } }] };
}

// The same rule in SQL, for the pages Prisma cannot express (src/domain/timelines/page.ts). What
// does not apply to a viewer is left out of the text rather than switched off by a parameter, so
// PostgreSQL plans each variant once per connection.

/**
 * A viewer in SQL: its id, or a column naming one viewer of many (live updates decide for every
 * stream of an instance at once, src/domain/live/hub.ts).
 */
export type Viewer = { id: bigint | Prisma.Sql };

/**
 * Whether the viewer may see note `n` by its visibility. The follow is looked up by a scalar
 * subquery: for EXISTS, PostgreSQL would hash all the viewer's follows first.
 */
export function audienceSql(viewer: Viewer | undefined): Prisma.Sql {
  if (!viewer) return Prisma.sql`n.visibility IN ('public', 'home')`;
  return Prisma.sql`(n.visibility IN ('public', 'home') OR n.author_id = ${viewer.id}
    OR (n.visibility = 'followers'
      AND (SELECT true FROM follows f WHERE f.follower_id = ${viewer.id} AND f.followee_id = n.author_id))
    OR (n.visibility = 'direct' AND n.send_to_id = ${viewer.id}))`;
}

/**
 * `AND NOT <frozen author>`, but for moderators `AND NOT <deleted author>` (a deleted account is
 * frozen until its deletion is done): `author` is the alias of a joined account row. By default
 * note `n`'s author is checked against those accounts, read once per statement from a partial
 * index (accounts_frozen_where_idx) into a hash: looking the author up for every note a page
 * walks or a search rechecks had been two thirds of a keyword search's execution (6.6 against
 * 2.3 ms at 300,000 notes).
 */
export function unfrozenSql(viewer: Pick<Account, "role"> | undefined, author?: Prisma.Sql): Prisma.Sql {
  const moderator = viewer !== undefined && isModerator(viewer);
  if (author) return moderator ? Prisma.sql`AND ${author}.deleted_at IS NULL` : Prisma.sql`AND NOT ${author}.frozen`;
  return moderator
    ? Prisma.sql`AND n.author_id NOT IN (SELECT a.id FROM accounts a WHERE a.frozen AND a.deleted_at IS NOT NULL)`
    : Prisma.sql`AND n.author_id NOT IN (SELECT a.id FROM accounts a WHERE a.frozen)`;
}

/**
 * Whether note `n`'s author's account is deleted (or being deleted): its deletion removes the
 * follows and list memberships that decided who saw its notes, before streams hear of them.
 */
export const authorDeletedSql = Prisma.sql`(SELECT a.deleted_at IS NOT NULL FROM accounts a WHERE a.id = n.author_id)`;

// Mutes (docs/accounts.md#mutes) are the viewer's choice, not the note's audience: a muted author's
// notes stay visible (on the global timeline, its own timeline, by id) but leave the viewer's
// feeds: home, lists, conversations, search and their streams. Every feed applies this one rule, in
// either form (test/note-loading.test.ts holds them equal).

/** Whether the viewer has not muted the author of a note. */
export function unmuted(viewer: Pick<Account, "id"> | undefined): Prisma.NoteWhereInput {
  return viewer ? { author: { mutedBy: { none: { muterId: viewer.id } } } } : {};
}

/**
 * `AND <the viewer has not muted author>`, for note `n`'s author by default: one probe of the
 * mutes' primary key (muter_id, muted_id), nothing for a viewer without an account.
 */
export function unmutedSql(
  viewer: Viewer | undefined,
  author: bigint | Prisma.Sql = Prisma.sql`n.author_id`,
): Prisma.Sql {
  return viewer
    ? Prisma.sql`AND NOT EXISTS (SELECT FROM mutes m WHERE m.muter_id = ${viewer.id} AND m.muted_id = ${author})`
    : Prisma.empty;
}
