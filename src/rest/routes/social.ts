// Routes of the social graph: follow (docs/accounts.md#follows), follow requests and
// blocks (docs/accounts.md#blocks), mutes (docs/accounts.md#mutes).
import { z } from "zod";
import * as social from "../../domain/social/service.ts";
import { AccountSummaryShape, accountSummaryView, FollowResultShape } from "../../http/views/account.ts";
import * as field from "../fields.ts";
import { querySnowflake } from "../query.ts";
import { route } from "../route.ts";

const accountParams = z.object({ account_name: field.accountRef });
const emptyBody = z.unknown();

function answerRoute(accept: boolean) {
  return route({
    method: "POST",
    path: `/follow_requests/:account_name/${accept ? "accept" : "reject"}`,
    operationId: accept ? "acceptFollowRequest" : "rejectFollowRequest",
    summary: `${accept ? "Accept" : "Reject"} a follow request (extension)`,
    tag: "social",
    auth: "required",
    params: accountParams,
    body: emptyBody,
    success: { status: 204, description: "done" },
    errors: ["FOLLOW_REQUEST_NOT_FOUND"],
    run: (ctx, { params }) => social.answerFollowRequest(ctx, params.account_name, accept),
    reply: () => ({ status: 204 }),
  });
}

function blockRoute(method: "POST" | "DELETE") {
  return route({
    method,
    path: "/accounts/:account_name/block",
    operationId: method === "POST" ? "block" : "unblock",
    summary: method === "POST" ? "Block an account: follows end both ways (extension)" : "Unblock (extension)",
    tag: "social",
    auth: "required",
    params: accountParams,
    body: emptyBody,
    success: { status: 204, description: "done" },
    errors: ["ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) =>
      method === "POST" ? social.block(ctx, params.account_name) : social.unblock(ctx, params.account_name),
    reply: () => ({ status: 204 }),
  });
}

function muteRoute(method: "POST" | "DELETE") {
  return route({
    method,
    path: "/accounts/:account_name/mute",
    operationId: method === "POST" ? "mute" : "unmute",
    summary:
      method === "POST"
        ? "Mute an account: its notes leave the caller's home, lists, conversations, search and streams, and it causes the caller no notifications; only the caller knows (see docs/accounts.md#mutes)"
        : "Unmute (see docs/accounts.md#mutes)",
    tag: "social",
    auth: "required",
    params: accountParams,
    body: emptyBody,
    success: { status: 204, description: "done (also when it already was)" },
    errors: ["ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) =>
      method === "POST" ? social.mute(ctx, params.account_name) : social.unmute(ctx, params.account_name),
    reply: () => ({ status: 204 }),
  });
}

export const socialRoutes = [
  route({
    method: "POST",
    path: "/accounts/:account_name/follow",
    operationId: "follow",
    summary: "Follow an account; `pending` when it approves follows itself",
    tag: "social",
    auth: "required",
    params: accountParams,
    body: emptyBody,
    success: { status: 201, description: "followed or requested", schema: FollowResultShape },
    errors: ["ALREADY_FOLLOWING", "YOU_ARE_BLOCKED", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) => social.follow(ctx, params.account_name),
    reply: (result) => ({ status: 201, body: result }),
  }),
  route({
    method: "DELETE",
    path: "/accounts/:account_name/follow",
    operationId: "unfollow",
    summary: "Unfollow, or withdraw a pending follow request",
    tag: "social",
    auth: "required",
    params: accountParams,
    body: emptyBody,
    success: { status: 204, description: "done" },
    errors: ["YOU_ARE_NOT_FOLLOW_ACCOUNT", "ACCOUNT_NOT_FOUND"],
    run: (ctx, { params }) => social.unfollow(ctx, params.account_name),
    reply: () => ({ status: 204 }),
  }),
  ...(["followers", "following"] as const).map((side) =>
    route({
      method: "GET",
      path: `/accounts/:account_name/${side}`,
      operationId: side === "followers" ? "getFollowers" : "getFollowing",
      summary:
        side === "followers"
          ? `An account's followers, newest follow first, ${social.FOLLOWS_PAGE} a page (see docs/accounts.md#followers)`
          : `The accounts an account follows, newest follow first, ${social.FOLLOWS_PAGE} a page (see docs/accounts.md#followers)`,
      tag: "social",
      auth: "public",
      params: accountParams,
      query: z.object({ before_id: querySnowflake.optional() }),
      success: {
        status: 200,
        description: `at most ${social.FOLLOWS_PAGE} accounts; a locked account's only for itself and its followers`,
        schema: z.array(AccountSummaryShape).max(social.FOLLOWS_PAGE),
      },
      errors: ["ACCOUNT_NOT_FOUND", "NO_PERMISSION", "NOTHING_LEFT"],
      run: (ctx, { params, query }) => social.followsOf(ctx, params.account_name, side, query.before_id),
      reply: (accounts, ctx) => ({ status: 200, body: accounts.map((a) => accountSummaryView(ctx, a)) }),
    }),
  ),
  route({
    method: "GET",
    path: "/follow_requests",
    operationId: "getFollowRequests",
    summary: `Incoming follow requests, by requester id newest first, ${social.FOLLOW_REQUESTS_PAGE} a page (extension)`,
    tag: "social",
    auth: "required",
    query: z.object({ before_id: querySnowflake.optional() }),
    success: {
      status: 200,
      description: "the requesters",
      schema: z.array(AccountSummaryShape),
    },
    errors: ["NOTHING_LEFT"],
    run: (ctx, { query }) => social.listFollowRequests(ctx, query.before_id),
    reply: (accounts, ctx) => ({
      status: 200,
      body: accounts.map((a) => accountSummaryView(ctx, a)),
    }),
  }),
  answerRoute(true),
  answerRoute(false),
  blockRoute("POST"),
  blockRoute("DELETE"),
  muteRoute("POST"),
  muteRoute("DELETE"),
];
