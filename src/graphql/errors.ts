// Domain errors as GraphQL types: every field that can fail returns `<Field>Success | DomainError`.
import { clientDetail, DomainError, ERROR_CODES } from "../domain/errors.ts";
import { builder } from "./builder.ts";

const ErrorCodeEnum = builder.enumType("ErrorCode", {
  description: 'The same codes as the REST API\'s `{"error": CODE}`.',
  values: ERROR_CODES,
});

builder.objectType(DomainError, {
  name: "DomainError",
  description: "A failure with one of the documented error codes.",
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, resolve: (err) => err.code }),
    message: t.string({
      description: "The code, or for INVALID_REQUEST and INVALID_QUERY what was wrong (REST's `detail`)",
      resolve: (err) => clientDetail(err) ?? err.message,
    }),
  }),
});
