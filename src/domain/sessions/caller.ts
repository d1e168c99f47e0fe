// Resolves the Authorization header to the calling account, and the rules every operation
// applies to it (docs/http.md#credentials): missing, unusable or frozen credentials.
import type { Account } from "../../generated/prisma/client.ts";
import type { Caller, Context, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { CallerAccount } from "./caller-cache.ts";

export async function authenticate(services: Services, header: string | undefined, ip?: string): Promise<Caller> {
  if (header === undefined || header.trim() === "") return { ip };
  try {
    const match = /^Bearer +([A-Za-z0-9._~+/=-]+) *$/i.exec(header);
    if (!match) throw new DomainError("INVALID_TOKEN", { credentials: true });
    const claims = await services.tokens.verify(match[1], "access", true);
    const account = await services.callers.get(claims.accountId);
    if (!account) throw new DomainError("INVALID_TOKEN", { credentials: true });
    // Revoked with every token issued before (DELETE /sessions, a passphrase change): each
    // instance's cache of the account hears of the change through PostgreSQL, so no lookup here.
    if (account.tokensValidFrom && claims.issuedAt < account.tokensValidFrom) {
      throw new DomainError("INVALID_TOKEN", { credentials: true });
    }
    return { account, ip, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt };
  } catch (err) {
    if (err instanceof DomainError) return { error: err, ip };
    throw err;
  }
}

/** The caller's account for an operation that requires credentials. */
export function requireAccount(ctx: Context): CallerAccount {
  const { account, error } = ctx.caller;
  if (error) throw error;
  if (!account) throw new DomainError("UNAUTHORIZED", { credentials: true });
  if (account.frozen) throw new DomainError("YOU_ARE_FROZEN");
  return account;
}

/** The caller's account, if any, for a public operation (credentials widen what it shows). */
export function optionalAccount(ctx: Context): CallerAccount | undefined {
  const { account, error } = ctx.caller;
  if (error) throw error;
  return account;
}

const RANK = { normal: 0, moderator: 1, admin: 2 } as const;

export function roleRank(account: Pick<Account, "role">): number {
  return RANK[account.role];
}

/** A moderator or higher (admin includes moderator): the one place that says so. */
export function isModerator(account: Pick<Account, "role">): boolean {
  return roleRank(account) >= RANK.moderator;
}

/** The roles isModerator holds for, to find every moderator in one query. */
export const MODERATOR_ROLES = (Object.keys(RANK) as Account["role"][]).filter((role) => isModerator({ role }));

/** The caller, who must be a moderator or higher. */
export function requireModerator(ctx: Context): CallerAccount {
  const account = requireAccount(ctx);
  if (!isModerator(account)) throw new DomainError("NO_PERMISSION");
  return account;
}
