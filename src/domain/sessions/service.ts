// Sessions (docs/accounts.md#sessions): login, refresh, and revocation of refresh tokens.
import { CaptchaUnavailableError } from "../../captcha.ts";
import type { Db } from "../../db/client.ts";
import { spendPassphraseCheck, verifyPassphrase } from "../accounts/passphrase.ts";
import { codePoints, keyOf, LIMITS, localNameOf } from "../accounts/rules.ts";
import type { Context, Services } from "../context.ts";
import { DomainError } from "../errors.ts";
import { requireAccount } from "./caller.ts";
import { secondsSinceServiceEpoch } from "./tokens.ts";

export interface LoginInput {
  name: string;
  passphrase: string;
  captchaToken: string;
}

export interface LoginResult {
  authorizationToken: string;
  refreshToken: string;
  /** Seconds since the service epoch at which the authorization token expires. */
  expiresIn: number;
}

export async function checkCaptcha(services: Services, token: string, ip?: string): Promise<void> {
  let human: boolean;
  try {
    human = await services.captcha.verify(token, ip);
  } catch (err) {
    if (!(err instanceof CaptchaUnavailableError)) throw err;
    services.log.error({ err }, "captcha verification failed");
    throw new DomainError("SERVICE_UNAVAILABLE");
  }
  if (!human) throw new DomainError("YOU_ARE_BOT");
}

export async function login(ctx: Context, input: LoginInput): Promise<LoginResult> {
  if (codePoints(input.name) > LIMITS.qualifiedNameMax || codePoints(input.passphrase) > LIMITS.passphraseMax) {
    throw new DomainError("INVALID_REQUEST");
  }
  await checkCaptcha(ctx, input.captchaToken, ctx.caller.ip);
  const name = localNameOf(input.name, ctx.config.localHost);
  const account = name ? await ctx.db.account.findUnique({ where: { nameKey: keyOf(name), deletedAt: null } }) : null;
  if (!account) {
    await spendPassphraseCheck(input.passphrase, ctx.config.bcryptCost);
    throw new DomainError("FAILED_TO_LOGIN");
  }
  if (!(await verifyPassphrase(input.passphrase, account.passphraseHash))) throw new DomainError("FAILED_TO_LOGIN");
  if (account.frozen) throw new DomainError("YOU_ARE_FROZEN");
  if (!account.verified) throw new DomainError("EMAIL_NOT_VERIFIED");

  const now = new Date();
  const access = await ctx.tokens.sign(account.id, "access", now);
  const refresh = await ctx.tokens.sign(account.id, "refresh", now);
  await ctx.db.session.create({
    data: { id: refresh.jti, accountId: account.id, createdAt: now, expiresAt: refresh.expiresAt },
  });
  // The new session's reads see what this login saw: the account just registered and verified.
  if (ctx.readYourWrites) ctx.readYourWrites.account = account.id;
  return {
    authorizationToken: access.token,
    refreshToken: refresh.token,
    expiresIn: secondsSinceServiceEpoch(access.expiresAt),
  };
}

export async function refresh(ctx: Context, refreshToken: string): Promise<{ authorizationToken: string }> {
  const claims = await ctx.tokens.verify(refreshToken, "refresh", false);
  const session = await ctx.db.session.findUnique({ where: { id: claims.jti }, include: { account: true } });
  if (!session || session.revokedAt || session.accountId !== claims.accountId) throw new DomainError("INVALID_TOKEN");
  if (session.account.frozen) throw new DomainError("YOU_ARE_FROZEN");
  const access = await ctx.tokens.sign(session.accountId, "access");
  return { authorizationToken: access.token };
}

/**
 * Revokes every refresh token of the account, and every authorization token issued before now
 * (DELETE /sessions, a passphrase change): on every instance at once, as the account's change is
 * announced to each one's caller cache.
 */
export async function revokeSessions(db: Pick<Db, "session" | "account">, accountId: bigint): Promise<void> {
  const now = new Date();
  await db.session.updateMany({ where: { accountId, revokedAt: null }, data: { revokedAt: now } });
  await db.account.update({ where: { id: accountId }, data: { tokensValidFrom: now } });
}

/** DELETE /sessions: every session of the caller ends, this request's token included. */
export async function revokeAllSessions(ctx: Context): Promise<void> {
  const caller = requireAccount(ctx);
  await ctx.db.$transaction((tx) => revokeSessions(tx, caller.id));
}

/** POST /logout: the session of this refresh token ends (its authorization tokens run out). */
export async function logout(ctx: Context, refreshToken: string): Promise<void> {
  const claims = await ctx.tokens.verify(refreshToken, "refresh", false);
  const { count } = await ctx.db.session.updateMany({
    where: { id: claims.jti, accountId: claims.accountId, revokedAt: null },
    data: { revokedAt: new Date() },
  });
  if (count === 0) throw new DomainError("INVALID_TOKEN");
}
