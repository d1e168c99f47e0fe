// Routes of accounts and sessions (spec 4.1, 4.2).
import type { ServerResponse } from "node:http";
import { z } from "zod";
import * as deletion from "../../domain/accounts/deletion.ts";
import { type AccountExport, exportAccount } from "../../domain/accounts/export.ts";
import * as accounts from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import * as sessions from "../../domain/sessions/service.ts";
import { type ResponseHeader, route } from "../route.ts";
import {
  AccountCreatedShape,
  accountCreatedView,
  OwnAccountShape,
  ownAccountView,
  PublicAccountShape,
  publicAccountView,
  RefreshedShape,
  TokensShape,
} from "../views/account.ts";
import { AccountExportShape, exportChunks } from "../views/export.ts";

const accountParams = z.object({ account_name: z.string() });
const emptyBody = z.unknown();

const etagHeader = (etag: string) => ({ etag: `"${etag}"` });
const ETAG = (required: boolean): ResponseHeader => ({
  name: "ETag",
  required,
  description: "guards the owner's next update (send it back in If-Match)",
});

function moderationRoute(method: "PUT" | "DELETE", action: "freeze" | "unfreeze" | "silence" | "unsilence") {
  const segment = action.replace(/^un/, "");
  return route({
    method,
    path: `/accounts/:account_name/${segment}`,
    summary: `${action[0].toUpperCase()}${action.slice(1)} an account (moderator or higher)`,
    tag: "accounts",
    auth: "moderator",
    params: accountParams,
    body: emptyBody,
    success: { status: 204, description: "done" },
    errors: [...(action === "freeze" ? (["ALREADY_FROZEN"] as const) : []), "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) => accounts.moderate(ctx, params.account_name, action),
    reply: () => ({ status: 204 }),
  });
}

/**
 * Writes the export as it is read, waiting for the client to take each piece: an account's
 * 100,000 notes never sit in memory at once. A failure midway cuts the connection (the status
 * is sent): the client sees a document that does not end.
 */
function writeExport(ctx: Context, exp: AccountExport) {
  return (response: ServerResponse) => {
    void (async () => {
      for await (const chunk of exportChunks(ctx, exp)) {
        if (response.destroyed) return;
        if (!response.write(chunk)) await new Promise((resolve) => response.once("drain", resolve));
      }
      response.end();
    })().catch((err) => {
      ctx.log.error({ err }, "account export cut short");
      response.destroy();
    });
  };
}

export const accountRoutes = [
  route({
    method: "POST",
    path: "/accounts",
    summary: "Create an account (state registering); a verification token is mailed",
    tag: "accounts",
    auth: "none",
    rateLimit: "register",
    body: z.object({
      name: z
        .string()
        .describe(
          "1 to 64 of A-Z a-z 0-9 - . _, first and last a letter or digit, not digits only (a path segment of digits is an account id)",
        ),
      email: z.string(),
      passphrase: z.string(),
      captcha_token: z.string(),
    }),
    success: { status: 200, description: "the new account", schema: AccountCreatedShape },
    errors: [
      "INVALID_ACCOUNT_NAME",
      "TOO_LONG_ACCOUNT_NAME",
      "INVALID_EMAIL",
      "VULNERABLE_PASSPHRASE",
      "YOU_ARE_BOT",
      "ACCOUNT_NAME_IN_USE",
      "EMAIL_IN_USE",
    ],
    run: (ctx, { body }) =>
      accounts.register(ctx, {
        name: body.name,
        email: body.email,
        passphrase: body.passphrase,
        captchaToken: body.captcha_token,
      }),
    reply: (account, ctx) => ({ status: 200, body: accountCreatedView(ctx, account) }),
  }),
  route({
    method: "GET",
    path: "/accounts/:account_name",
    readsFrom: "replica",
    summary: "Public view of an account; its owner also gets the ETag for updates",
    tag: "accounts",
    auth: "public",
    params: accountParams,
    success: {
      status: 200,
      description: "the account; its owner also gets the ETag",
      schema: PublicAccountShape,
      headers: [ETAG(false)],
    },
    errors: ["ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) => accounts.getAccount(ctx, params.account_name),
    reply: ({ account, etag }, ctx) => ({
      status: 200,
      body: publicAccountView(ctx, account),
      headers: etag ? etagHeader(etag) : {},
    }),
  }),
  route({
    method: "PATCH",
    path: "/accounts/:account_name",
    summary: "Edit the account; a new e-mail waits for confirmation (202)",
    tag: "accounts",
    auth: "required",
    params: accountParams,
    headers: ["If-Match"],
    body: z.object({
      nickname: z.string().optional(),
      email: z.string().optional(),
      passphrase: z.string().optional(),
      bio: z.string().optional(),
      locked: z.boolean().optional(),
      avatar_file_id: z.string().optional(),
      header_file_id: z.string().optional(),
    }),
    success: { status: 200, description: "the account", schema: OwnAccountShape, headers: [ETAG(true)] },
    also: [
      {
        status: 202,
        description: "the account; the new e-mail waits for confirmation (spec 3.2)",
        schema: OwnAccountShape,
        headers: [ETAG(true)],
      },
    ],
    errors: [
      "INVALID_SEQUENCE",
      "INVALID_EMAIL",
      "VULNERABLE_PASSPHRASE",
      "EMAIL_IN_USE",
      "NO_PERMISSION",
      "ACCOUNT_NOT_FOUND",
      "INVALID_ETAG",
      "FILE_NOT_FOUND",
      "UNSUPPORTED_FILE_TYPE",
    ],
    run: (ctx, { params, body, headers }) =>
      accounts.updateAccount(ctx, params.account_name, {
        nickname: body.nickname,
        email: body.email,
        passphrase: body.passphrase,
        bio: body.bio,
        locked: body.locked,
        avatarFileId: body.avatar_file_id,
        headerFileId: body.header_file_id,
        ifMatch: headers["if-match"],
      }),
    reply: (result, ctx) => ({
      status: result.emailChangePending ? 202 : 200,
      body: ownAccountView(ctx, result.account),
      headers: etagHeader(result.etag),
    }),
  }),
  route({
    method: "DELETE",
    path: "/accounts/:account_name",
    summary:
      "Delete the account (its owner, with its passphrase, or an admin): everything of it goes, the name stays reserved",
    tag: "accounts",
    auth: "required",
    params: accountParams,
    body: z.object({ passphrase: z.string().optional() }),
    success: { status: 204, description: "deleted: unusable at once, what is left removed in the background" },
    errors: ["NO_PERMISSION", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => deletion.deleteAccount(ctx, params.account_name, body.passphrase),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "GET",
    path: "/accounts/:account_name/export",
    summary: "Everything the account holds, as one JSON document (its owner only), streamed",
    tag: "accounts",
    auth: "required",
    params: accountParams,
    success: { status: 200, description: "the account's data", schema: AccountExportShape },
    errors: ["NO_PERMISSION", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) => exportAccount(ctx, params.account_name),
    reply: (exp, ctx) => ({
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8" },
      write: writeExport(ctx, exp),
    }),
  }),
  moderationRoute("PUT", "freeze"),
  moderationRoute("DELETE", "unfreeze"),
  moderationRoute("PUT", "silence"),
  moderationRoute("DELETE", "unsilence"),
  route({
    method: "POST",
    path: "/accounts/:account_name/resend_verify_email",
    summary: "Send a new verification token; the earlier one stops working",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ captcha_token: z.string() }),
    success: { status: 204, description: "sent" },
    errors: ["YOU_ARE_BOT", "ACCOUNT_ALREADY_VERIFIED", "YOU_ARE_FROZEN", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => accounts.resendVerification(ctx, params.account_name, body.captcha_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/reset_passphrase",
    summary: "Mail a passphrase reset token (1 h, single use); always 204, whether or not the account exists",
    tag: "accounts",
    auth: "none",
    rateLimit: "register",
    params: accountParams,
    body: z.object({ captcha_token: z.string() }),
    success: { status: 204, description: "mailed, if the account exists" },
    errors: ["YOU_ARE_BOT"],
    run: (ctx, { params, body }) => accounts.requestPassphraseReset(ctx, params.account_name, body.captcha_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/passphrase",
    summary: "Set the passphrase with a mailed reset token; every session of the account ends",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ token: z.string(), passphrase: z.string() }),
    success: { status: 204, description: "set" },
    errors: ["INVALID_TOKEN", "VULNERABLE_PASSPHRASE"],
    run: (ctx, { params, body }) => accounts.setPassphrase(ctx, params.account_name, body.token, body.passphrase),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/verify_email",
    summary: "Verify the e-mail address (registration or e-mail change) with the mailed token",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ token: z.string() }),
    success: { status: 204, description: "verified" },
    errors: ["INVALID_TOKEN", "EMAIL_IN_USE", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => accounts.verifyEmail(ctx, params.account_name, body.token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/login",
    summary: "Log in with a name (plain or qualified) and passphrase",
    tag: "sessions",
    auth: "none",
    rateLimit: "login",
    body: z.object({ name: z.string(), passphrase: z.string(), captcha_token: z.string() }),
    success: { status: 200, description: "the tokens", schema: TokensShape },
    errors: ["FAILED_TO_LOGIN", "YOU_ARE_BOT", "YOU_ARE_FROZEN", "EMAIL_NOT_VERIFIED"],
    run: (ctx, { body }) =>
      sessions.login(ctx, { name: body.name, passphrase: body.passphrase, captchaToken: body.captcha_token }),
    reply: (tokens) => ({
      status: 200,
      body: {
        authorization_token: tokens.authorizationToken,
        refresh_token: tokens.refreshToken,
        expires_in: tokens.expiresIn,
      },
    }),
  }),
  route({
    method: "POST",
    path: "/refresh",
    summary: "Exchange a refresh token for a new authorization token",
    tag: "sessions",
    auth: "none",
    body: z.object({ refresh_token: z.string() }),
    success: { status: 200, description: "a new authorization token", schema: RefreshedShape },
    errors: ["INVALID_TOKEN", "EXPIRED_TOKEN", "YOU_ARE_FROZEN"],
    run: (ctx, { body }) => sessions.refresh(ctx, body.refresh_token),
    reply: (result) => ({ status: 200, body: { authorization_token: result.authorizationToken } }),
  }),
  route({
    method: "POST",
    path: "/logout",
    summary: "End the session of a refresh token (CONTRACT 13)",
    tag: "sessions",
    auth: "none",
    body: z.object({ refresh_token: z.string() }),
    success: { status: 204, description: "the refresh token is revoked" },
    errors: ["INVALID_TOKEN", "EXPIRED_TOKEN"],
    run: (ctx, { body }) => sessions.logout(ctx, body.refresh_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "DELETE",
    path: "/sessions",
    summary:
      "Log out everywhere: every refresh token of the caller, and every authorization token issued until now (CONTRACT 13)",
    tag: "sessions",
    auth: "required",
    success: { status: 204, description: "every session ended, on every instance" },
    errors: [],
    run: (ctx) => sessions.revokeAllSessions(ctx),
    reply: () => ({ status: 204 }),
  }),
];
