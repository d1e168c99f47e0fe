// Login, refresh, and logging out (one session, or all of them).
import * as sessions from "../domain/sessions/service.ts";
import { builder, done, limited } from "./builder.ts";

const Session = builder.objectRef<sessions.LoginResult>("Session").implement({
  fields: (t) => ({
    authorizationToken: t.exposeString("authorizationToken"),
    refreshToken: t.exposeString("refreshToken"),
    expiresIn: t.exposeInt("expiresIn", {
      description: "Expiry of the authorization token, in seconds since 2022-01-01T00:00:00Z.",
    }),
  }),
});

const Refreshed = builder.objectRef<{ authorizationToken: string }>("RefreshedSession").implement({
  fields: (t) => ({ authorizationToken: t.exposeString("authorizationToken") }),
});

builder.mutationFields((t) => ({
  login: t.field({
    type: Session,
    errors: {},
    args: {
      name: t.arg.string({ required: true }),
      passphrase: t.arg.string({ required: true }),
      captchaToken: t.arg.string({ required: true }),
    },
    resolve: limited("login", (_root, args, ctx) => sessions.login(ctx, args)),
  }),
  refresh: t.field({
    type: Refreshed,
    errors: {},
    args: { refreshToken: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => sessions.refresh(ctx, args.refreshToken),
  }),
  logout: t.field({
    type: "Boolean",
    description: "Ends the session of this refresh token.",
    errors: {},
    args: { refreshToken: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => done(sessions.logout(ctx, args.refreshToken)),
  }),
  revokeSessions: t.field({
    type: "Boolean",
    description: "Logs out everywhere: every session of the caller, and every token issued until now.",
    errors: {},
    resolve: (_root, _args, ctx) => done(sessions.revokeAllSessions(ctx)),
  }),
}));
