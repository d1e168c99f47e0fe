// Routes of accounts and sessions (docs/accounts.md).
import type { ServerResponse } from "node:http";
import { z } from "zod";
import * as deletion from "../../domain/accounts/deletion.ts";
import { type AccountExport, exportAccount } from "../../domain/accounts/export.ts";
import * as accounts from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import * as sessions from "../../domain/sessions/service.ts";
import {
  AccountCreatedShape,
  accountCreatedView,
  OwnAccountShape,
  ownAccountView,
  PublicAccountShape,
  publicAccountView,
  RefreshedShape,
  TokensShape,
} from "../../http/views/account.ts";
import { AccountExportShape, exportChunks } from "../../http/views/export.ts";
import * as field from "../fields.ts";
import { type ResponseHeader, route } from "../route.ts";

const accountParams = z.object({ account_name: field.accountRef });
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
    operationId: `${action}Account`,
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
    operationId: "createAccount",
    summary: "Create an account (state registering); a verification token is mailed",
    tag: "accounts",
    auth: "none",
    rateLimit: "register",
    body: z.object({
      name: field.accountName,
      email: field.email,
      passphrase: field.passphrase,
      captcha_token: field.captchaToken,
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
    operationId: "getAccount",
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
    operationId: "updateAccount",
    summary: "Edit the account; a new e-mail waits for confirmation (202)",
    tag: "accounts",
    auth: "required",
    params: accountParams,
    headers: ["If-Match"],
    body: z.object({
      nickname: field.nickname.optional(),
      email: field.email.optional().describe("a new address: it waits for its confirmation (202)"),
      passphrase: field.passphrase.optional(),
      bio: field.bio.optional(),
      locked: z.boolean().optional().describe("follows need the account's approval (extension)"),
      avatar_file_id: field.ownImage("avatar").optional(),
      header_file_id: field.ownImage("header").optional(),
    }),
    bodyRequired: true,
    success: { status: 200, description: "the account", schema: OwnAccountShape, headers: [ETAG(true)] },
    also: [
      {
        status: 202,
        description:
          "the account; the new e-mail applies once the token mailed to it is confirmed (see docs/accounts.md#verification)",
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
    operationId: "deleteAccount",
    summary:
      "Delete the account (its owner, with its passphrase, or an admin): everything of it goes, the name stays reserved",
    tag: "accounts",
    auth: "required",
    params: accountParams,
    body: z.object({
      passphrase: field.passphrase.optional().describe("the account's passphrase: its owner must send it"),
    }),
    success: { status: 204, description: "deleted: unusable at once, what is left removed in the background" },
    errors: ["NO_PERMISSION", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => deletion.deleteAccount(ctx, params.account_name, body.passphrase),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "GET",
    path: "/accounts/:account_name/export",
    operationId: "exportAccount",
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
    operationId: "resendVerifyEmail",
    summary: "Send a new verification token; the earlier one stops working",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ captcha_token: field.captchaToken }),
    success: { status: 204, description: "sent" },
    errors: ["YOU_ARE_BOT", "ACCOUNT_ALREADY_VERIFIED", "YOU_ARE_FROZEN", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => accounts.resendVerification(ctx, params.account_name, body.captcha_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/reset_passphrase",
    operationId: "requestPassphraseReset",
    summary: "Mail a passphrase reset token (1 h, single use); always 204, whether or not the account exists",
    tag: "accounts",
    auth: "none",
    rateLimit: "register",
    params: accountParams,
    body: z.object({ captcha_token: field.captchaToken }),
    success: { status: 204, description: "mailed, if the account exists" },
    errors: ["YOU_ARE_BOT"],
    run: (ctx, { params, body }) => accounts.requestPassphraseReset(ctx, params.account_name, body.captcha_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/passphrase",
    operationId: "resetPassphrase",
    summary: "Set the passphrase with a mailed reset token; every session of the account ends",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ token: z.string().describe("the mailed reset token"), passphrase: field.passphrase }),
    success: { status: 204, description: "set" },
    errors: ["INVALID_TOKEN", "VULNERABLE_PASSPHRASE"],
    run: (ctx, { params, body }) => accounts.setPassphrase(ctx, params.account_name, body.token, body.passphrase),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/accounts/:account_name/verify_email",
    operationId: "verifyEmail",
    summary: "Verify the e-mail address (registration or e-mail change) with the mailed token",
    tag: "accounts",
    auth: "none",
    params: accountParams,
    body: z.object({ token: z.string().describe("the mailed verification token") }),
    success: { status: 204, description: "verified" },
    errors: ["INVALID_TOKEN", "EMAIL_IN_USE", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params, body }) => accounts.verifyEmail(ctx, params.account_name, body.token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "POST",
    path: "/login",
    operationId: "login",
    summary: "Log in with a name (plain or qualified) and passphrase",
    tag: "sessions",
    auth: "none",
    rateLimit: "login",
    body: z.object({
      name: z.string().describe("the account's name, plain or qualified (`@alice@host`)"),
      passphrase: z.string().describe("the account's passphrase"),
      captcha_token: field.captchaToken,
    }),
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
    operationId: "refresh",
    summary: "Exchange a refresh token for a new authorization token",
    tag: "sessions",
    auth: "none",
    body: z.object({ refresh_token: z.string().describe("the refresh token `POST /login` gave") }),
    success: { status: 200, description: "a new authorization token", schema: RefreshedShape },
    errors: ["INVALID_TOKEN", "EXPIRED_TOKEN", "YOU_ARE_FROZEN"],
    run: (ctx, { body }) => sessions.refresh(ctx, body.refresh_token),
    reply: (result) => ({ status: 200, body: { authorization_token: result.authorizationToken } }),
  }),
  route({
    method: "POST",
    path: "/logout",
    operationId: "logout",
    summary: "End the session of a refresh token (see docs/accounts.md#sessions)",
    tag: "sessions",
    auth: "none",
    body: z.object({ refresh_token: z.string().describe("the refresh token `POST /login` gave") }),
    success: { status: 204, description: "the refresh token is revoked" },
    errors: ["INVALID_TOKEN", "EXPIRED_TOKEN"],
    run: (ctx, { body }) => sessions.logout(ctx, body.refresh_token),
    reply: () => ({ status: 204 }),
  }),
  route({
    method: "DELETE",
    path: "/sessions",
    operationId: "revokeSessions",
    summary:
      "Log out everywhere: every refresh token of the caller, and every authorization token issued until now (see docs/accounts.md#sessions)",
    tag: "sessions",
    auth: "required",
    success: { status: 204, description: "every session ended, on every instance" },
    errors: [],
    run: (ctx) => sessions.revokeAllSessions(ctx),
    reply: () => ({ status: 204 }),
  }),
];
