// Who may see a note (CONTRACT 5): the one rule every reader of notes applies, as a filter.
// public and home: anyone; followers: the author and accepted followers; direct: the author and
// the addressee. A frozen author's notes are seen by moderators only.
import type { Prisma } from "../../db/client.ts";
import type { Account, Visibility } from "../../generated/prisma/client.ts";
import { roleRank } from "../sessions/caller.ts";

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
  const moderator = viewer !== undefined && roleRank(viewer) >= 1;
  return moderator ? { OR: audience } : { AND: [{ OR: audience }, { author: { frozen: false } }] };
}
