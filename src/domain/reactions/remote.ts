// Reactions of other servers' accounts (docs/federation.md, "Reactions"): a remote account's Like or
// EmojiReact of a note it may see is its reaction, under the local rules: one per account per note
// (the same unique key, so an activity handled twice is one reaction and counts once: the counts'
// triggers run only for a row written or deleted), none to an author who blocks it, and the note's
// local author notified as for a local reaction. src/federation/reactions.ts reads the activities.
import { Prisma, queryRows } from "../../db/client.ts";
import type { Services } from "../context.ts";
import { followsActorSql, silencedAccount } from "../instances/silence.ts";
import { audienceSql, unfrozenSql } from "../notes/visibility.ts";
import { notifiableSql } from "../notifications/notify.ts";
import { rememberOvertaken, storingHeldSql } from "../overtaken.ts";
import { checkReactionEmoji } from "./emoji.ts";

/**
 * What a reaction without an emoji Murmur can show becomes: a Mastodon favourite (a `Like` without
 * content), a remote custom emoji, anything that is not one RGI emoji. Misskey shows a Mastodon
 * favourite as a heart too.
 */
export const FALLBACK_REACTION = "❤️";

/** The emoji a remote reaction is stored with: `text` when it is one RGI emoji, else FALLBACK_REACTION. */
export async function remoteReactionEmoji(services: Services, text: string | undefined): Promise<string> {
  // `<:alias:id>` is this server's own custom emoji form: another server's reaction never names one.
  if (!text || text.startsWith("<")) return FALLBACK_REACTION;
  return checkReactionEmoji(services, text.trim()).catch(() => FALLBACK_REACTION);
}

/**
 * Remote account `accountId`'s reaction `emoji` to note `noteId`, when it may see the note and its
 * author does not block it; a second one (another emoji, or the same activity again) changes
 * nothing. `activity`, the id of its Like: written only under that id's key held
 * (src/domain/overtaken.ts), so not once its Undo came, even at the same moment. Whether a
 * reaction was written.
 */
export async function remoteReact(
  services: Services,
  accountId: bigint,
  noteId: bigint,
  emoji: string,
  activity?: URL,
): Promise<boolean> {
  // A silenced server's account is heard only by its followers (docs/federation.md#moderation).
  const heard = (await silencedAccount(services, accountId))
    ? Prisma.sql`AND ${followsActorSql(Prisma.sql`t.author_id`, accountId)}`
    : Prisma.empty;
  // Its Like's key held first (a CTE), and the reactor read only once it is.
  const [held, whenHeld] = activity
    ? [
        Prisma.sql`held AS (${storingHeldSql("undone-reaction", activity.href)}),`,
        Prisma.sql`AND EXISTS (SELECT FROM held)`,
      ]
    : [Prisma.empty, Prisma.empty];
  const [row] = await queryRows<{ reacted: boolean }>(
    services.db,
    Prisma.sql`
    WITH ${held} reactor AS (
      SELECT a.id FROM accounts a WHERE a.id = ${accountId} AND a.host IS NOT NULL AND a.deleted_at IS NULL
        ${whenHeld} FOR KEY SHARE
    ), target AS (
      SELECT n.id, n.author_id FROM notes n WHERE n.id = ${noteId} AND ${audienceSql({ id: accountId })} ${unfrozenSql(undefined)}
    ), reacted AS (
      INSERT INTO reactions (id, note_id, account_id, emoji)
      SELECT ${services.ids.next()}, t.id, r.id, ${emoji} FROM target t, reactor r
      WHERE NOT EXISTS (SELECT FROM blocks b WHERE b.blocker_id = t.author_id AND b.blocked_id = r.id)
      ON CONFLICT (note_id, account_id) DO NOTHING
      RETURNING note_id
    ), notified AS (
      INSERT INTO notifications (id, recipient_id, type, actor_id, note_id, content)
      SELECT ${services.ids.next()}, t.author_id, 'reacted'::"NotificationType", ${accountId}, t.id, ${emoji}
      FROM reacted r JOIN target t ON t.id = r.note_id JOIN accounts au ON au.id = t.author_id AND au.host IS NULL
      WHERE ${notifiableSql(Prisma.sql`t.author_id`, accountId)} ${heard}
    )
    SELECT EXISTS (SELECT FROM reacted) AS reacted`,
  ).catch((err) => {
    // The note was deleted meanwhile: nothing to react to.
    if ((err as { code?: string }).code === "23503") return [{ reacted: false }];
    throw err;
  });
  return row?.reacted ?? false;
}

/**
 * Remote account `accountId`'s reaction to note `noteId` withdrawn (its Undo); none, nothing. With
 * `remember`, its Like's id, the Undo is remembered first (src/domain/overtaken.ts): that Like, come
 * late or being stored at this moment, leaves no reaction once this returns.
 */
export async function remoteUnreact(
  services: Services,
  accountId: bigint,
  noteId: bigint,
  { remember }: { remember?: URL } = {},
): Promise<boolean> {
  if (remember) await rememberOvertaken(services.db, "undone-reaction", remember);
  const { count } = await services.db.reaction.deleteMany({ where: { noteId, accountId } });
  return count > 0;
}
