// Accounts (docs/accounts.md): registration, e-mail verification, the public
// view, updates guarded by an ETag, roles, freezing and silencing.
import { createHash, randomBytes } from "node:crypto";
import { Prisma, uniqueViolation } from "../../db/client.ts";
import { makeKeysSoon } from "../../federation/keys.ts";
import type { Account, EmailTokenPurpose, Role } from "../../generated/prisma/client.ts";
import type { Mail } from "../../mail/mailer.ts";
import { queueMail, queueMailToAccount } from "../../mail/queue.ts";
import type { Context, Services } from "../context.ts";
import { ownImageId } from "../drive/service.ts";
import { DomainError } from "../errors.ts";
import { optionalAccount, requireAccount, requireModerator, roleRank } from "../sessions/caller.ts";
import { checkCaptcha, revokeSessions } from "../sessions/service.ts";
import { profileChanged } from "./federation.ts";
import { hashPassphrase } from "./passphrase.ts";
import {
  accountSelector,
  checkAccountName,
  checkEmail,
  checkNotBlank,
  checkPassphrase,
  checkText,
  keyOf,
  LIMITS,
  qualifiedName,
  remoteNameOf,
} from "./rules.ts";

const EMAIL_TOKEN_LIFETIME_MS = 24 * 60 * 60 * 1000;

type Tx = Prisma.TransactionClient;

export interface RegisterInput {
  name: string;
  email: string;
  passphrase: string;
  captchaToken: string;
}

/**
 * Registration (docs/accounts.md#registration, in its order): field rules, then captcha, then
 * uniqueness.
 */
export async function register(ctx: Context, input: RegisterInput): Promise<Account> {
  checkAccountFields(input);
  await checkCaptcha(ctx, input.captchaToken, ctx.caller.ip);
  return insertAccount(ctx, input, { role: "normal", verified: false });
}

function checkAccountFields(input: Pick<RegisterInput, "name" | "email" | "passphrase">): void {
  checkAccountName(input.name);
  checkEmail(input.email);
  checkPassphrase(input.passphrase);
}

/**
 * A new account whose fields were checked; an unverified one gets the mail with its
 * registration token, in the transaction that creates it.
 */
async function insertAccount(
  services: Services,
  input: Pick<RegisterInput, "name" | "email" | "passphrase">,
  standing: { role: Role; verified: boolean },
): Promise<Account> {
  const nameKey = keyOf(input.name);
  const emailKey = keyOf(input.email);
  const taken = await services.db.account.findMany({
    where: { OR: [{ nameKey }, { emailKey }] },
    select: { nameKey: true },
  });
  if (taken.some((a) => a.nameKey === nameKey)) throw new DomainError("ACCOUNT_NAME_IN_USE");
  if (taken.length) throw new DomainError("EMAIL_IN_USE");

  const passphraseHash = await hashPassphrase(input.passphrase, services.config.bcryptCost);
  const token = newEmailToken();
  let account: Account;
  let mailId: bigint | undefined;
  try {
    [account, mailId] = await services.db.$transaction(async (tx) => {
      const created = await tx.account.create({
        data: {
          id: services.ids.next(),
          name: input.name,
          nameKey,
          email: input.email,
          emailKey,
          nickname: input.name,
          passphraseHash,
          role: standing.role,
          verified: standing.verified,
        },
      });
      if (standing.verified) return [created, undefined] as const;
      await storeEmailToken(services, tx, created.id, "registration", token);
      return [created, await queueMail(tx, emailTokenMail(created, created.email, token))] as const;
    });
  } catch (err) {
    // A concurrent registration won the race for the name or the e-mail.
    const unique = uniqueViolation(err);
    if (!unique) throw err;
    throw new DomainError(unique.columns.some((c) => /email/.test(c)) ? "EMAIL_IN_USE" : "ACCOUNT_NAME_IN_USE");
  }
  if (mailId !== undefined) mailQueued(services, mailId);
  // Its ActivityPub keys (docs/federation.md#actors), made after the answer: an RSA pair costs CPU.
  if (services.config.federation) makeKeysSoon(services.db, account.id, services.log);
  return account;
}

export async function resendVerification(ctx: Context, nameOrId: string, captchaToken: string): Promise<void> {
  await checkCaptcha(ctx, captchaToken, ctx.caller.ip);
  const account = await findAccount(ctx, nameOrId);
  // A remote account has no e-mail here (migration 20261127171000_remote_accounts).
  if (account.host !== null) throw new DomainError("ACCOUNT_NOT_FOUND");
  if (account.verified) throw new DomainError("ACCOUNT_ALREADY_VERIFIED");
  if (account.frozen) throw new DomainError("YOU_ARE_FROZEN");
  const token = newEmailToken();
  // Storing the new token deletes the earlier one: a resend invalidates it.
  const mailId = await ctx.db.$transaction(async (tx) => {
    await storeEmailToken(ctx, tx, account.id, "registration", token);
    return queueMail(tx, emailTokenMail(account, account.email, token));
  });
  mailQueued(ctx, mailId);
}

const RESET_TOKEN_LIFETIME_MS = 60 * 60_000;

/**
 * POST /accounts/{name}/reset_passphrase: mails a reset token when the account exists, and
 * answers the same, in the same time, when it does not. Both send the same statements: one
 * read of the account, then one transaction whose INSERTs (the token, the mail) take their
 * rows from the account's (none for nobody); the mail queue sends it after the answer.
 */
export async function requestPassphraseReset(ctx: Context, nameOrId: string, captchaToken: string): Promise<void> {
  await checkCaptcha(ctx, captchaToken, ctx.caller.ip);
  const account = await findAccountQuietly(ctx, nameOrId);
  const token = newEmailToken();
  const accountId = account?.id ?? NO_ACCOUNT;
  const expiresAt = new Date(Date.now() + RESET_TOKEN_LIFETIME_MS);
  // Built for nobody too: the same work whether or not the account exists.
  const text = [
    `Hello ${account?.nickname ?? ""},`,
    "",
    "Someone asked to reset the passphrase of your Murmur account. If it was you, use this token:",
    "",
    `Reset token: ${token}`,
    "",
    "It works once and expires in an hour. If it was not you, ignore this mail.",
    "",
  ].join("\n");
  const mailId = await ctx.db.$transaction(async (tx) => {
    await tx.emailToken.deleteMany({ where: { accountId, purpose: "passphrase_reset" } });
    // Raw SQL for INSERT ... SELECT: Prisma's create has no form that inserts nothing when the
    // account is missing, and another statement for nobody would tell it apart.
    await tx.$executeRaw`
      INSERT INTO email_tokens (id, account_id, purpose, token_hash, expires_at)
      SELECT ${ctx.ids.next()}, id, 'passphrase_reset'::"EmailTokenPurpose", ${hashToken(token)}, ${expiresAt}
      FROM accounts WHERE id = ${accountId}`;
    // Given up when the token expires: a later mail would carry a dead token.
    return queueMailToAccount(tx, accountId, { subject: "Reset your passphrase", text }, expiresAt);
  });
  if (mailId !== undefined) mailQueued(ctx, mailId);
}

/** An id no account has (snowflakes are positive): what statements about nobody are about. */
const NO_ACCOUNT = -1n;

/**
 * The account a path segment names, or undefined, in one statement whatever the segment (an
 * id, a name, a qualified name) and whether or not it exists: lookUp's order, an id first.
 */
async function findAccountQuietly(services: Services, segment: string): Promise<Account | undefined> {
  const { id, nameKey } = accountSelector(segment, services.config.localHost);
  // Local accounts only: a remote account has no e-mail or passphrase here.
  const found = await services.db.account.findMany({
    where: { OR: [{ id: id ?? NO_ACCOUNT }, { nameKey: nameKey ?? "" }], host: null },
    take: 2,
  });
  // A deleted account's id names that account, and so nothing; it is never read as a name.
  const byId = found.find((a) => id !== undefined && a.id === id);
  if (byId) return byId.deletedAt === null ? byId : undefined;
  return found.find((a) => a.nameKey === nameKey && a.deletedAt === null);
}

/**
 * POST /accounts/{name}/passphrase: a reset token sets the passphrase, once, and every session
 * of the account ends. An unknown account is INVALID_TOKEN too: nothing tells it exists.
 */
export async function setPassphrase(ctx: Context, nameOrId: string, token: string, passphrase: string): Promise<void> {
  checkPassphrase(passphrase);
  const account = await findAccountQuietly(ctx, nameOrId);
  const passphraseHash = await hashPassphrase(passphrase, ctx.config.bcryptCost);
  await ctx.db.$transaction(async (tx) => {
    const stored = await tx.emailToken.findUnique({ where: { tokenHash: hashToken(token) } });
    if (
      !account ||
      !stored ||
      stored.purpose !== "passphrase_reset" ||
      stored.accountId !== account.id ||
      stored.expiresAt.getTime() <= Date.now()
    ) {
      throw new DomainError("INVALID_TOKEN");
    }
    const { count } = await tx.emailToken.deleteMany({ where: { id: stored.id } });
    if (count === 0) throw new DomainError("INVALID_TOKEN");
    await tx.account.update({ where: { id: account.id }, data: { passphraseHash } });
    await revokeSessions(tx, account.id);
  });
}

/** Applies a registration or e-mail-change token: single use, 24 hours. */
export async function verifyEmail(ctx: Context, nameOrId: string, token: string): Promise<void> {
  const account = await findAccount(ctx, nameOrId);
  const tokenHash = hashToken(token);
  await ctx.db.$transaction(async (tx) => {
    const stored = await tx.emailToken.findUnique({ where: { tokenHash } });
    if (
      !stored ||
      stored.purpose === "passphrase_reset" ||
      stored.accountId !== account.id ||
      stored.expiresAt.getTime() <= Date.now()
    ) {
      throw new DomainError("INVALID_TOKEN");
    }
    // Deleting first makes the token single-use even under concurrent requests.
    const { count } = await tx.emailToken.deleteMany({ where: { id: stored.id } });
    if (count === 0) throw new DomainError("INVALID_TOKEN");
    if (stored.purpose === "registration") {
      await tx.account.update({ where: { id: account.id }, data: { verified: true } });
      return;
    }
    const email = stored.newEmail ?? account.email;
    try {
      await tx.account.update({ where: { id: account.id }, data: { email, emailKey: keyOf(email) } });
    } catch (err) {
      if (uniqueViolation(err)) throw new DomainError("EMAIL_IN_USE");
      throw err;
    }
  });
}

/**
 * The columns an account's public view shows, and the e-mail its owner sees: what a note carries
 * of its author (never the passphrase hash, nor the keys only lookups use).
 */
export const PUBLIC_ACCOUNT_SELECT = {
  id: true,
  name: true,
  email: true,
  nickname: true,
  bio: true,
  locked: true,
  avatarFileId: true,
  headerFileId: true,
  followersCount: true,
  followingCount: true,
  notesCount: true,
  host: true,
  avatarUrl: true,
  headerUrl: true,
} satisfies Prisma.AccountSelect;

export type PublicAccount = Prisma.AccountGetPayload<{ select: typeof PUBLIC_ACCOUNT_SELECT }>;

/** The public columns of an account already in hand (a caller's row carries its hash too). */
export function publicColumnsOf(a: PublicAccount): PublicAccount {
  return {
    id: a.id,
    name: a.name,
    email: a.email,
    nickname: a.nickname,
    bio: a.bio,
    locked: a.locked,
    avatarFileId: a.avatarFileId,
    headerFileId: a.headerFileId,
    followersCount: a.followersCount,
    followingCount: a.followingCount,
    notesCount: a.notesCount,
    host: a.host,
    avatarUrl: a.avatarUrl,
    headerUrl: a.headerUrl,
  };
}

/**
 * The account a path segment names, read by `find`: the id of an account, existing or deleted,
 * else a plain or qualified name (docs/http.md#account-paths), else another server's account
 * `@name@host` (docs/federation.md#remote-accounts), stored here on first use and given to `from`
 * as read from the primary (a replica may not have it yet).
 */
async function lookUp<A extends { id: bigint; host: string | null }>(
  services: Services,
  segment: string,
  find: (where: Prisma.AccountWhereUniqueInput) => Promise<A | null>,
  from: (account: Account) => A,
): Promise<A> {
  const remote = remoteNameOf(segment, services.config.localHost);
  if (remote) {
    if (!services.federation) throw new DomainError("ACCOUNT_NOT_FOUND");
    return from(await services.federation.remoteAccount(remote.name, remote.host));
  }
  const { id, nameKey } = accountSelector(segment, services.config.localHost);
  // A deleted account's tombstone keeps its name reserved, and is found by nothing.
  const byId = id === undefined ? null : await find({ id, deletedAt: null });
  if (byId) {
    if (byId.host === null) return byId;
    // Another server's account, as its name is, is no account here with federation off.
    if (!services.federation) throw new DomainError("ACCOUNT_NOT_FOUND");
    services.federation.used(byId);
    return byId;
  }
  // Nor is its id ever read as a name: an all-digit name of an older installation (registration
  // refuses them now, rules.ts) is reached by name only while it is no account's id.
  if (id !== undefined && (await services.db.account.count({ where: { id } })) > 0) {
    throw new DomainError("ACCOUNT_NOT_FOUND");
  }
  const account = nameKey ? await find({ nameKey, deletedAt: null }) : null;
  if (!account) throw new DomainError("ACCOUNT_NOT_FOUND");
  return account;
}

/** An account by path segment, whole: for the rules that read it, never for display. */
export function findAccount(services: Services, segment: string): Promise<Account> {
  return lookUp(
    services,
    segment,
    (where) => services.db.account.findUnique({ where }),
    (a) => a,
  );
}

/** An account by path segment, its public columns only: for display. */
export function findPublicAccount(services: Services, segment: string): Promise<PublicAccount> {
  return lookUp(
    services,
    segment,
    (where) => services.db.account.findUnique({ where, select: PUBLIC_ACCOUNT_SELECT }),
    publicColumnsOf,
  );
}

/** The caller's own account, read afresh: authentication's copy leaves out its counters. */
export async function getViewer(ctx: Context): Promise<PublicAccount> {
  const account = await ctx.db.account.findUnique({
    where: { id: requireAccount(ctx).id, deletedAt: null },
    select: PUBLIC_ACCOUNT_SELECT,
  });
  if (!account) throw new DomainError("ACCOUNT_NOT_FOUND");
  return account;
}

/** An account's e-mail is shown to its owner only. */
export function visibleEmail(viewerId: bigint | undefined, account: Pick<Account, "id" | "email">): string | null {
  return viewerId === account.id ? account.email : null;
}

/** visibleEmail in SQL, of the accounts row aliased `a`. */
export function visibleEmailSql(viewerId: bigint | undefined, a: string): Prisma.Sql {
  return viewerId === undefined
    ? Prisma.sql`NULL::text`
    : Prisma.sql`CASE WHEN ${Prisma.raw(a)}.id = ${viewerId} THEN ${Prisma.raw(a)}.email END`;
}

export interface AccountView {
  account: PublicAccount;
  /** Set when the caller owns the account: the ETag that guards its next update. */
  etag?: string;
}

/** The public view of an account; the owner also gets its ETag. */
export async function getAccount(ctx: Context, nameOrId: string): Promise<AccountView> {
  const caller = optionalAccount(ctx);
  const account = await findPublicAccount(ctx, nameOrId);
  return { account, etag: caller?.id === account.id ? etagOf(account) : undefined };
}

/** The ETag of an account (docs/accounts.md#update): MD5 hex of `nickname:email`. */
export function etagOf(account: Pick<Account, "nickname" | "email">): string {
  return createHash("md5").update(`${account.nickname}:${account.email}`, "utf8").digest("hex");
}

export function qualifiedNameOf(services: Services, account: { name: string; host?: string | null }): string {
  return qualifiedName(account.name, services.config.localHost, account.host);
}

export interface UpdateAccountInput {
  nickname?: string;
  email?: string;
  passphrase?: string;
  bio?: string;
  locked?: boolean;
  /** Extension: one of the owner's image files, or "" to unset. */
  avatarFileId?: string;
  headerFileId?: string;
  /** The If-Match header: the ETag the client last saw, or a list of them, or `*`. */
  ifMatch?: string;
}

export interface UpdateAccountResult extends AccountView {
  etag: string;
  /** True when a new e-mail waits for confirmation (202). */
  emailChangePending: boolean;
}

export async function updateAccount(
  ctx: Context,
  nameOrId: string,
  input: UpdateAccountInput,
): Promise<UpdateAccountResult> {
  const caller = requireAccount(ctx);
  const target = await findAccount(ctx, nameOrId);
  if (target.id !== caller.id) throw new DomainError("NO_PERMISSION");
  const { nickname, email, passphrase, bio, locked, avatarFileId, headerFileId } = input;
  if ([nickname, email, passphrase, bio, locked, avatarFileId, headerFileId].every((v) => v === undefined)) {
    throw new DomainError("INVALID_REQUEST");
  }
  // Every requested change is validated before any is applied.
  if (nickname !== undefined) {
    checkText(nickname, LIMITS.nicknameMin, LIMITS.nicknameMax, false);
    checkNotBlank(nickname);
  }
  if (bio !== undefined) checkText(bio, 0, LIMITS.bioMax, true);
  if (email !== undefined) checkEmail(email);
  if (passphrase !== undefined) checkPassphrase(passphrase);
  const avatar = avatarFileId === undefined ? undefined : await ownImageId(ctx, caller.id, avatarFileId);
  const header = headerFileId === undefined ? undefined : await ownImageId(ctx, caller.id, headerFileId);
  const passphraseHash = passphrase === undefined ? undefined : await hashPassphrase(passphrase, ctx.config.bcryptCost);
  const token = newEmailToken();

  const result = await ctx.db.$transaction(async (tx) => {
    // Lock the row so the ETag compared is the one replaced.
    const [current] = await tx.$queryRaw<{ nickname: string; email: string }[]>`
      SELECT nickname, email FROM accounts WHERE id = ${target.id} FOR UPDATE`;
    if (!current) throw new DomainError("ACCOUNT_NOT_FOUND");
    if (input.ifMatch !== undefined && !etagMatches(input.ifMatch, etagOf(current))) {
      throw new DomainError("INVALID_ETAG");
    }
    const emailChange = email !== undefined && keyOf(email) !== keyOf(current.email) ? email : undefined;
    if (emailChange) {
      const holder = await tx.account.findUnique({ where: { emailKey: keyOf(emailChange) }, select: { id: true } });
      if (holder) throw new DomainError("EMAIL_IN_USE");
      await storeEmailToken(ctx, tx, target.id, "email_change", token, emailChange);
    }
    const account = await tx.account.update({
      where: { id: target.id },
      data: { nickname, bio, locked, passphraseHash, avatarFileId: avatar, headerFileId: header },
      select: PUBLIC_ACCOUNT_SELECT,
    });
    if (passphraseHash) await revokeSessions(tx, target.id);
    if ([nickname, bio, locked, avatar, header].some((v) => v !== undefined)) await profileChanged(ctx, tx, target.id);
    const mailId = emailChange ? await queueMail(tx, emailTokenMail(account, emailChange, token)) : undefined;
    return { account, emailChange, mailId };
  });
  if (result.mailId !== undefined) mailQueued(ctx, result.mailId);
  return { account: result.account, etag: etagOf(result.account), emailChangePending: Boolean(result.emailChange) };
}

function etagMatches(header: string, etag: string): boolean {
  return header
    .split(",")
    .map((part) =>
      part
        .trim()
        .replace(/^W\//, "")
        .replace(/^"(.*)"$/, "$1"),
    )
    .some((candidate) => candidate === "*" || candidate === etag);
}

export type ModerationAction = "freeze" | "unfreeze" | "silence" | "unsilence";

/** Freezing and silencing: moderators and admins, on accounts of a lower role only. */
export async function moderate(ctx: Context, nameOrId: string, action: ModerationAction): Promise<void> {
  const moderator = requireModerator(ctx);
  const target = await findAccount(ctx, nameOrId);
  if (roleRank(target) >= roleRank(moderator)) throw new DomainError("NO_PERMISSION");
  await applyModeration(ctx, target, action);
}

/** Whether the account's flag changed (unfreezing or unsilencing an account that is not is no error). */
async function applyModeration(services: Services, target: Account, action: ModerationAction): Promise<boolean> {
  if (action === "freeze" || action === "unfreeze") {
    const frozen = action === "freeze";
    // The search index holds only notes' text, never who may see them: it learns nothing here.
    const { count } = await services.db.account.updateMany({
      where: { id: target.id, frozen: !frozen },
      data: { frozen },
    });
    if (count === 0 && frozen) throw new DomainError("ALREADY_FROZEN");
    return count > 0;
  }
  const silenced = action === "silence";
  const { count } = await services.db.account.updateMany({
    where: { id: target.id, silenced: !silenced },
    data: { silenced },
  });
  return count > 0;
}

/**
 * Operator command: freeze, unfreeze, silence or unsilence any account, whatever its role (the
 * operator stands above every role). Its tokens answer YOU_ARE_FROZEN at once on every instance:
 * each one's cache of callers hears of the change from PostgreSQL.
 */
export async function moderateAsOperator(
  services: Services,
  nameOrId: string,
  action: ModerationAction,
): Promise<{ account: Account; changed: boolean }> {
  const account = await findAccount(services, nameOrId);
  return { account, changed: await applyModeration(services, account, action) };
}

/** Operator command: give an account a role. */
export async function setRole(services: Services, nameOrId: string, role: Role): Promise<Account> {
  const account = await findAccount(services, nameOrId);
  return services.db.account.update({ where: { id: account.id }, data: { role } });
}

export interface OperatorAccountInput {
  name: string;
  email: string;
  passphrase: string;
  role: Role;
  /** Verified at once; otherwise its owner gets the registration mail, as after a registration. */
  verified: boolean;
}

/**
 * Operator command: an account made without a captcha, with a role, verified or not: the first
 * admin of an instance whose registration needs a real captcha and a mail.
 */
export async function createAccount(services: Services, input: OperatorAccountInput): Promise<Account> {
  checkAccountFields(input);
  return insertAccount(services, input, { role: input.role, verified: input.verified });
}

/** Operator command: an account's e-mail counts as verified, as its registration token would make it. */
export async function verifyAccount(services: Services, nameOrId: string): Promise<Account> {
  const account = await findAccount(services, nameOrId);
  if (account.verified) throw new DomainError("ACCOUNT_ALREADY_VERIFIED");
  return services.db.$transaction(async (tx) => {
    // Its registration token would verify nothing more.
    await tx.emailToken.deleteMany({ where: { accountId: account.id, purpose: "registration" } });
    return tx.account.update({ where: { id: account.id }, data: { verified: true } });
  });
}

/**
 * Operator command: a passphrase reset token for the account, handed over by the operator rather
 * than mailed; it works as a mailed one does (POST /accounts/{name}/passphrase, once, within the
 * hour), and replaces any earlier one.
 */
export async function issuePassphraseReset(
  services: Services,
  nameOrId: string,
): Promise<{ account: Account; token: string; expiresAt: Date }> {
  const account = await findAccount(services, nameOrId);
  const token = newEmailToken();
  const expiresAt = new Date(Date.now() + RESET_TOKEN_LIFETIME_MS);
  await services.db.$transaction((tx) =>
    storeEmailToken(services, tx, account.id, "passphrase_reset", token, undefined, RESET_TOKEN_LIFETIME_MS),
  );
  return { account, token, expiresAt };
}

/** `account list`'s page bound: an operator pages with `--after`. */
export const OPERATOR_LIST_MAX = 10_000;

/** Operator command: accounts by id (oldest first), past `afterId`, deleted ones left out. */
export function listAccounts(
  services: Services,
  options: { limit: number; afterId?: bigint },
): Promise<Pick<Account, "id" | "name" | "role" | "createdAt" | "notesCount">[]> {
  return services.db.account.findMany({
    where: { deletedAt: null, ...(options.afterId === undefined ? {} : { id: { gt: options.afterId } }) },
    select: { id: true, name: true, role: true, createdAt: true, notesCount: true },
    orderBy: { id: "asc" },
    take: Math.min(options.limit, OPERATOR_LIST_MAX),
  });
}

function newEmailToken(): string {
  return randomBytes(24).toString("base64url");
}

function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Stores a token in place of the account's earlier one of the same purpose. */
async function storeEmailToken(
  services: Services,
  tx: Tx,
  accountId: bigint,
  purpose: EmailTokenPurpose,
  token: string,
  newEmail?: string,
  lifetimeMs = EMAIL_TOKEN_LIFETIME_MS,
): Promise<void> {
  await tx.emailToken.deleteMany({ where: { accountId, purpose } });
  await tx.emailToken.create({
    data: {
      id: services.ids.next(),
      accountId,
      purpose,
      tokenHash: hashToken(token),
      newEmail,
      expiresAt: new Date(Date.now() + lifetimeMs),
    },
  });
}

/** The mail that carries a registration or e-mail-change token. */
function emailTokenMail(account: Pick<Account, "nickname">, to: string, token: string): Mail {
  const text = [
    `Hello ${account.nickname},`,
    "",
    "Confirm this e-mail address for your Murmur account with this token:",
    "",
    `Verification token: ${token}`,
    "",
    "The token works once and expires in 24 hours.",
    "",
  ].join("\n");
  return { to, subject: "Confirm your e-mail address", text };
}

/** Said in the request's log (its id on the line), so that the queue's lines on the mail can be found. */
function mailQueued(services: Services, mailId: bigint): void {
  services.log.info({ mailId: mailId.toString() }, "mail queued");
}
