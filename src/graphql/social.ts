// Follows, follow requests and blocks.
import * as social from "../domain/social/service.ts";
import { AccountRef } from "./account.ts";
import { builder, done } from "./builder.ts";

const FollowResult = builder.objectRef<{ pending: boolean }>("FollowResult").implement({
  fields: (t) => ({
    pending: t.exposeBoolean("pending", { description: "True when the account approves follows itself." }),
  }),
});

builder.queryFields((t) => ({
  followRequests: t.field({
    type: [AccountRef],
    errors: {},
    description: "Accounts asking to follow the caller.",
    resolve: (_root, _args, ctx) => social.listFollowRequests(ctx),
  }),
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
  };
});
