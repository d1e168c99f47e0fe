// Login and refresh.
import * as sessions from "../domain/sessions/service.ts";
import { builder } from "./builder.ts";

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
    resolve: (_root, args, ctx) => sessions.login(ctx, args),
  }),
  refresh: t.field({
    type: Refreshed,
    errors: {},
    args: { refreshToken: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => sessions.refresh(ctx, args.refreshToken),
  }),
}));
