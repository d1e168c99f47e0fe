// The cast most tests of who-sees-what share, built through the public API as a client would:
// alice writes; her follower follows her; bob and a stranger follow no one and no one follows
// them (bob usually the one she writes to or names); a moderator moderates.
import * as act from "./actions.ts";
import { account, type TestAccount } from "./fixtures.ts";
import type { TestServer } from "./server.ts";

export type Role = "alice" | "follower" | "bob" | "stranger" | "moderator";

/** Each role's account name. A file picks the roles it needs and names them as its assertions read. */
export type CastNames = Partial<Record<Role, string>>;

/** The whole cast under its usual names. */
export const CAST = { alice: "alice", follower: "fol", bob: "bob", stranger: "sam", moderator: "mod" } as const;

/**
 * Verified, logged-in accounts for the roles `names` gives (by default the whole `CAST`),
 * registered side by side, so their ids come in no set order; once all exist the follower
 * follows alice, when both are cast.
 */
export async function cast<N extends CastNames = typeof CAST>(
  server: TestServer,
  names: N = CAST as CastNames as N,
): Promise<{ [R in keyof N]-?: TestAccount }> {
  const roles = (Object.keys(names) as Role[]).filter((role) => names[role] !== undefined);
  const made = await Promise.all(
    roles.map((role) => account(server, names[role] as string, role === "moderator" ? "moderator" : "normal")),
  );
  const members: Partial<Record<Role, TestAccount>> = Object.fromEntries(roles.map((role, i) => [role, made[i]]));
  if (members.follower && members.alice) await act.follow(server, members.follower, members.alice);
  return members as { [R in keyof N]-?: TestAccount };
}
