// Reports from other servers (docs/federation.md#moderation): a `Flag` received whose objects name
// local accounts (by their actor ids) and maybe their notes is a report about each of those
// accounts (src/domain/reports/service.ts), its reporter the sending server: Mastodon and Misskey
// send it as their instance actor, whose account means nothing here. A Flag naming nothing of this
// server's changes nothing. (A report forwarded from here: src/federation/report-flag.ts.)
import type { InboxContext, InboxListenerSetters } from "@fedify/fedify";
import { Flag, Note } from "@fedify/fedify/vocab";
import { parseSnowflake } from "../db/snowflake.ts";
import { COMMENT_MAX, receiveReport } from "../domain/reports/service.ts";
import type { FederationData } from "./data.ts";
import { displayText } from "./remote-accounts.ts";

/** Of a Flag's objects, how many are read: an account and its notes named as evidence, with room to spare. */
const MAX_OBJECTS = 100;
/** Local accounts one Flag may report (one report each). */
const MAX_ACCOUNTS = 5;

export function listenToFlags(listeners: InboxListenerSetters<FederationData>): void {
  listeners.on(Flag, async (ctx, flag) => {
    if (!flag.actorId) return;
    const { accounts, notes } = await localObjects(ctx, flag.objectIds.slice(0, MAX_OBJECTS));
    // Nothing of this server's named: someone else's business.
    if (accounts.length === 0) return;
    const comment = displayText(flag.content?.toString().trim(), COMMENT_MAX);
    for (const accountId of accounts) {
      await receiveReport(ctx.data, { reporterHost: flag.actorId.host, accountId, noteIds: notes, comment });
    }
  });
}

/**
 * The local accounts and notes `uris` name. A Flag naming only notes reports their authors
 * (Misskey and Mastodon name the account too).
 */
async function localObjects(
  ctx: InboxContext<FederationData>,
  uris: URL[],
): Promise<{ accounts: bigint[]; notes: bigint[] }> {
  const accounts = new Set<bigint>();
  const notes = new Set<bigint>();
  for (const uri of uris) {
    const parsed = ctx.parseUri(uri);
    if (parsed?.type === "actor") {
      const id = parseSnowflake(parsed.identifier);
      if (id !== undefined && accounts.size < MAX_ACCOUNTS) accounts.add(id);
    } else if (parsed?.type === "object" && parsed.class === Note) {
      const id = parseSnowflake(parsed.values.id ?? "");
      if (id !== undefined && notes.size < MAX_OBJECTS) notes.add(id);
    }
  }
  if (accounts.size === 0 && notes.size > 0) {
    const authors = await ctx.data.db.note.findMany({
      where: { id: { in: [...notes] } },
      select: { authorId: true },
      distinct: ["authorId"],
      take: MAX_ACCOUNTS,
    });
    for (const { authorId } of authors) accounts.add(authorId);
  }
  return { accounts: [...accounts], notes: [...notes] };
}
