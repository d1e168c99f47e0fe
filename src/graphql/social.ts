// Follows, follow requests, blocks and mutes.
import * as social from "../domain/social/service.ts";
import { AccountConnection } from "./account.ts";
import { builder, done } from "./builder.ts";
import { AFTER_DESCRIPTION, firstDescription, page, pageComplexity } from "./connection.ts";

const FollowResult = builder.objectRef<{ pending: boolean }>("FollowResult").implement({
  fields: (t) => ({
    pending: t.exposeBoolean("pending", { description: "True when the account approves follows itself." }),
  }),
});

builder.queryFields((t) => ({
  followRequests: t.field({
    type: AccountConnection,
    errors: { directResult: true },
    complexity: pageComplexity(social.FOLLOW_REQUESTS_PAGE),
    description: "Accounts asking to follow the caller, by account id newest first.",
    args: {
      first: t.arg.int({ description: firstDescription(social.FOLLOW_REQUESTS_PAGE) }),
      after: t.arg.string({ description: AFTER_DESCRIPTION }),
    },
    resolve: (_root, args, ctx) =>
      page(args, social.FOLLOW_REQUESTS_PAGE, (after, limit) => social.listFollowRequests(ctx, after, limit)),
  }),
  ...Object.fromEntries(
    (["followers", "following"] as const).map((side) => [
      side,
      t.field({
        type: AccountConnection,
        errors: { directResult: true },
        complexity: pageComplexity(social.FOLLOWS_PAGE),
        description:
          side === "followers"
            ? "An account's followers, newest follow first (a locked account's: for itself and its followers)."
            : "The accounts an account follows, newest follow first (a locked account's: for itself and its followers).",
        args: {
          name: t.arg.string({ required: true }),
          first: t.arg.int({ description: firstDescription(social.FOLLOWS_PAGE) }),
          after: t.arg.string({ description: AFTER_DESCRIPTION }),
        },
        resolve: (_root, args, ctx) =>
          page(args, social.FOLLOWS_PAGE, (after, limit) => social.followsOf(ctx, args.name, side, after, limit)),
      }),
    ]),
  ),
}));

builder.mutationFields((t) => {
  const byName = (run: (ctx: Parameters<typeof social.block>[0], name: string) => Promise<void>, description: string) =>
    t.boolean({
      errors: {},
      description,
      args: { name: t.arg.string({ required: true }) },
      resolve: (_root, args, ctx) => done(run(ctx, args.name)),
    });
  return {
    follow: t.field({
      type: FollowResult,
      errors: {},
      args: { name: t.arg.string({ required: true }) },
      resolve: (_root, args, ctx) => social.follow(ctx, args.name),
    }),
    unfollow: byName(social.unfollow, "Unfollow, or withdraw a pending request."),
    acceptFollowRequest: byName((ctx, name) => social.answerFollowRequest(ctx, name, true), "Accept a follow request."),
    rejectFollowRequest: byName(
      (ctx, name) => social.answerFollowRequest(ctx, name, false),
      "Reject a follow request.",
    ),
    block: byName(social.block, "Block an account: follows end both ways."),
    unblock: byName(social.unblock, "Unblock an account."),
    mute: byName(
      social.mute,
      "Mute an account: its notes leave the caller's home, lists, conversations, search and streams, and it causes the caller no notifications.",
    ),
    unmute: byName(social.unmute, "Unmute an account."),
  };
});
