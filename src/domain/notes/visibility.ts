// Who may see a note (CONTRACT 5): the one rule every reader of notes applies, as a filter.
// public and home: anyone; followers: the author and accepted followers; direct: the author and
// the addressee. A frozen author's notes are seen by moderators only.
import type { Prisma } from "../../db/client.ts";
import type { Account } from "../../generated/prisma/client.ts";
import { roleRank } from "../sessions/caller.ts";

export function visibleTo(viewer: Account | undefined): Prisma.NoteWhereInput {
  const audience: Prisma.NoteWhereInput[] = [{ visibility: { in: ["public", "home"] } }];
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
