// The Account type and the account queries and mutations.
import * as deletion from "../domain/accounts/deletion.ts";
import { exportAccount } from "../domain/accounts/export.ts";
import * as accounts from "../domain/accounts/service.ts";
import type { Account } from "../generated/prisma/client.ts";
import { exportDocument } from "../http/views/export.ts";
import { ACCOUNT } from "../projection/account.ts";
import { builder, done, limited } from "./builder.ts";
import { connectionType } from "./connection.ts";
import { projected } from "./projected.ts";

// Any account row, or a note's author (which carries only these columns).
export const AccountRef = builder.objectRef<accounts.PublicAccount>("Account").implement({
  description: "An account, as its public view shows it; `email` only to its owner.",
  fields: (t) => ({
    id: t.id(projected(ACCOUNT.id)),
    name: t.string({ description: "Qualified name `@name@host`.", ...projected(ACCOUNT.name) }),
    host: t.string({
      nullable: true,
      description: "The server of a remote account (ActivityPub); null for an account of this server.",
      ...projected(ACCOUNT.host),
    }),
    nickname: t.string(projected(ACCOUNT.nickname)),
    bio: t.string(projected(ACCOUNT.bio)),
    avatar: t.string(projected(ACCOUNT.avatar)),
    header: t.string(projected(ACCOUNT.header)),
    followedCount: t.int(projected(ACCOUNT.followersCount)),
    followingCount: t.int(projected(ACCOUNT.followingCount)),
    noteCount: t.int(projected(ACCOUNT.notesCount)),
    locked: t.boolean(projected(ACCOUNT.locked)),
    email: t.string({ nullable: true, ...projected(ACCOUNT.visibleEmail) }),
  }),
});

/** A page of accounts (a list's assignees, follow requests), each its own cursor. */
export const AccountConnection = connectionType(
  "Account",
  AccountRef,
  "A page of accounts, by account id newest first. Pass `pageInfo.endCursor` as `after` for the next one.",
);

// The create response (docs/accounts.md#shapes): it shows the registrant its e-mail, which Account
// shows only to a logged-in owner.
const NewAccount = builder.objectRef<Account>("NewAccount").implement({
  description: "A registered account, not yet verified: id, qualified name and e-mail.",
  fields: (t) => ({
    id: t.id(projected(ACCOUNT.id)),
    name: t.string(projected(ACCOUNT.name)),
    email: t.string(projected(ACCOUNT.email)),
    account: t.field({ type: AccountRef, resolve: (a) => a }),
  }),
});

const AccountUpdate = builder.objectRef<accounts.UpdateAccountResult>("AccountUpdate").implement({
  fields: (t) => ({
    account: t.field({ type: AccountRef, resolve: (r) => r.account }),
    etag: t.exposeString("etag", { description: "Pass as `ifMatch` to guard the next update." }),
    emailChangePending: t.exposeBoolean("emailChangePending"),
  }),
});

const CreateAccountInput = builder.inputType("CreateAccountInput", {
  fields: (t) => ({
    name: t.string({ required: true }),
    email: t.string({ required: true }),
    passphrase: t.string({ required: true }),
    captchaToken: t.string({ required: true }),
  }),
});

const UpdateAccountInput = builder.inputType("UpdateAccountInput", {
  fields: (t) => ({
    nickname: t.string(),
    email: t.string(),
    passphrase: t.string(),
    bio: t.string(),
    locked: t.boolean(),
    avatarFileId: t.id({ description: "One of your image files; empty to unset." }),
    headerFileId: t.id({ description: "One of your image files; empty to unset." }),
  }),
});

builder.queryFields((t) => ({
  account: t.field({
    type: AccountRef,
    errors: {},
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => (await accounts.getAccount(ctx, args.name)).account,
  }),
  viewer: t.field({
    type: AccountRef,
    errors: {},
    description: "The calling account.",
    resolve: (_root, _args, ctx) => accounts.getViewer(ctx),
  }),
  exportAccount: t.field({
    type: "JSONObject",
    errors: {},
    description:
      "Everything the account holds (its owner only): the document GET /accounts/{name}/export streams, " +
      "whole (openapi.json's AccountExport).",
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => exportDocument(ctx, await exportAccount(ctx, args.name)),
  }),
}));

builder.mutationFields((t) => ({
  createAccount: t.field({
    type: NewAccount,
    errors: {},
    args: { input: t.arg({ type: CreateAccountInput, required: true }) },
    resolve: limited("register", (_root, { input }, ctx) => accounts.register(ctx, input)),
  }),
  verifyEmail: t.boolean({
    errors: {},
    args: { name: t.arg.string({ required: true }), token: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => done(accounts.verifyEmail(ctx, args.name, args.token)),
  }),
  resendVerifyEmail: t.boolean({
    errors: {},
    args: { name: t.arg.string({ required: true }), captchaToken: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => done(accounts.resendVerification(ctx, args.name, args.captchaToken)),
  }),
  requestPassphraseReset: t.boolean({
    errors: {},
    description: "Mail a passphrase reset token (1 h, single use). The same answer whether or not the account exists.",
    args: { name: t.arg.string({ required: true }), captchaToken: t.arg.string({ required: true }) },
    resolve: limited("register", (_root, args, ctx) =>
      done(accounts.requestPassphraseReset(ctx, args.name, args.captchaToken)),
    ),
  }),
  resetPassphrase: t.boolean({
    errors: {},
    description: "Set the passphrase with a mailed reset token; every session of the account ends.",
    args: {
      name: t.arg.string({ required: true }),
      token: t.arg.string({ required: true }),
      passphrase: t.arg.string({ required: true }),
    },
    resolve: (_root, args, ctx) => done(accounts.setPassphrase(ctx, args.name, args.token, args.passphrase)),
  }),
  updateAccount: t.field({
    type: AccountUpdate,
    errors: {},
    args: {
      name: t.arg.string({ required: true }),
      ifMatch: t.arg.string({ description: "The ETag last seen; the update fails with INVALID_ETAG if it changed." }),
      input: t.arg({ type: UpdateAccountInput, required: true }),
    },
    resolve: (_root, { name, ifMatch, input }, ctx) =>
      accounts.updateAccount(ctx, name, {
        nickname: input.nickname ?? undefined,
        email: input.email ?? undefined,
        passphrase: input.passphrase ?? undefined,
        bio: input.bio ?? undefined,
        locked: input.locked ?? undefined,
        avatarFileId: input.avatarFileId?.toString(),
        headerFileId: input.headerFileId?.toString(),
        ifMatch: ifMatch ?? undefined,
      }),
  }),
  deleteAccount: t.boolean({
    errors: {},
    description:
      "Delete the account: its owner, with its passphrase, or an admin. Everything of it goes; the name stays reserved.",
    args: { name: t.arg.string({ required: true }), passphrase: t.arg.string() },
    resolve: (_root, args, ctx) => done(deletion.deleteAccount(ctx, args.name, args.passphrase ?? undefined)),
  }),
  ...Object.fromEntries(
    (["freeze", "unfreeze", "silence", "unsilence"] as const).map((action) => [
      `${action}Account`,
      t.boolean({
        errors: {},
        description: `${action[0].toUpperCase()}${action.slice(1)} an account (moderator or higher).`,
        args: { name: t.arg.string({ required: true }) },
        resolve: (_root, args, ctx) => done(accounts.moderate(ctx, args.name, action)),
      }),
    ]),
  ),
}));
