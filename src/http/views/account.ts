// The documented account shapes (docs/accounts.md#shapes) and their views.
import { z } from "zod";
import type { PublicAccount } from "../../domain/accounts/service.ts";
import type { Context } from "../../domain/context.ts";
import type { Account } from "../../generated/prisma/client.ts";
import { ACCOUNT } from "../../projection/account.ts";
import { viewerOf } from "../../projection/field.ts";
import { named, Snowflake, Url, wireObject } from "./wire.ts";

export const AccountCreatedShape = named(
  "AccountCreated",
  "A registered account, not yet verified (see docs/accounts.md#shapes: the create response).",
  z.strictObject({ id: Snowflake, name: z.string(), email: z.string() }),
);

export const OwnAccountShape = named(
  "OwnAccount",
  "An account as its owner's update shows it (see docs/accounts.md#shapes).",
  z.strictObject({ id: Snowflake, name: z.string(), nickname: z.string(), bio: z.string(), email: z.string() }),
);

export const PublicAccountShape = named(
  "PublicAccount",
  "The public view of an account (see docs/accounts.md#shapes).",
  z.strictObject({
    id: Snowflake,
    name: z.string(),
    nickname: z.string(),
    bio: z.string(),
    avatar: Url,
    header: Url,
    followed_count: z.number().int(),
    following_count: z.number().int(),
    note_count: z.number().int(),
  }),
);

export const AccountSummaryShape = named(
  "AccountSummary",
  "The short account of a notification's actor and of a follow request.",
  z.strictObject({ id: Snowflake, name: z.string(), nickname: z.string(), avatar: Url }),
);

export const TokensShape = named(
  "Tokens",
  "The tokens of a login; `expires_in` is the authorization token's expiry in seconds since 2022-01-01T00:00:00Z.",
  z.strictObject({ authorization_token: z.string(), refresh_token: z.string(), expires_in: z.number().int() }),
);

export const RefreshedShape = named(
  "Refreshed",
  "A new authorization token.",
  z.strictObject({ authorization_token: z.string() }),
);

export const FollowResultShape = named(
  "FollowResult",
  "`pending` when the account approves follows itself.",
  z.strictObject({ pending: z.boolean() }),
);

const ACCOUNT_CREATED = wireObject<Account, typeof AccountCreatedShape>(AccountCreatedShape, {
  id: ACCOUNT.id,
  name: ACCOUNT.name,
  email: ACCOUNT.email,
});

const OWN_ACCOUNT = wireObject<PublicAccount, typeof OwnAccountShape>(OwnAccountShape, {
  id: ACCOUNT.id,
  name: ACCOUNT.name,
  nickname: ACCOUNT.nickname,
  bio: ACCOUNT.bio,
  email: ACCOUNT.email,
});

const PUBLIC_ACCOUNT = wireObject<PublicAccount, typeof PublicAccountShape>(PublicAccountShape, {
  id: ACCOUNT.id,
  name: ACCOUNT.name,
  nickname: ACCOUNT.nickname,
  bio: ACCOUNT.bio,
  avatar: ACCOUNT.avatar,
  header: ACCOUNT.header,
  followed_count: ACCOUNT.followersCount,
  following_count: ACCOUNT.followingCount,
  note_count: ACCOUNT.notesCount,
});

export const ACCOUNT_SUMMARY = wireObject<
  Pick<Account, "id" | "name" | "host" | "nickname" | "avatarFileId" | "avatarUrl">,
  typeof AccountSummaryShape
>(AccountSummaryShape, { id: ACCOUNT.id, name: ACCOUNT.name, nickname: ACCOUNT.nickname, avatar: ACCOUNT.avatar });

export function accountCreatedView(ctx: Context, a: Account): z.infer<typeof AccountCreatedShape> {
  return ACCOUNT_CREATED.view(a, viewerOf(ctx));
}

export function ownAccountView(ctx: Context, a: PublicAccount): z.infer<typeof OwnAccountShape> {
  return OWN_ACCOUNT.view(a, viewerOf(ctx));
}

export function publicAccountView(ctx: Context, a: PublicAccount): z.infer<typeof PublicAccountShape> {
  return PUBLIC_ACCOUNT.view(a, viewerOf(ctx));
}

export function accountSummaryView(
  ctx: Context,
  a: Pick<Account, "id" | "name" | "host" | "nickname" | "avatarFileId" | "avatarUrl">,
): z.infer<typeof AccountSummaryShape> {
  return ACCOUNT_SUMMARY.view(a, viewerOf(ctx));
}
