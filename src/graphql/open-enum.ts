// Enums whose unknown input values reach the resolver, so the domain answers them with its own
// code, as it does for REST. `NoteInput.visibility` is the `Visibility` enum for clients and
// code generators, but `visibility: secret` (or a variable "secret") must stay the typed result
// `DomainError { code: INVALID_VISIBILITY }` that REST answers as 400, not a validation error
// of GraphQL's own that replaces the code (and, the request refused whole, gives HTTP 400
// without a code a client can tell apart). The check moves from GraphQL's input coercion to the
// service, which already makes it. Only unknown *names* pass: a value of the wrong kind (a
// string literal, a number) is still GraphQL's validation error.
import { type GraphQLEnumValue, type GraphQLSchema, isEnumType } from "graphql";

/** The `extensions` of an enum type that lets unknown names through to its resolvers. */
export const OPEN_ENUM = { openEnum: true } as const;

/**
 * Marks every enum built with OPEN_ENUM open. graphql-js (parseValue, parseLiteral and
 * validation) and graphql-jit (compiled variables and literals) all look input names up through
 * `getValue`: an unknown name there becomes a value of its own, the name itself, and the
 * resolver's service refuses it. Output is unchanged: serialising still knows only the values.
 */
export function openEnums(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isEnumType(type) || type.extensions.openEnum !== true) continue;
    const known = type.getValue.bind(type);
    type.getValue = (name: string): GraphQLEnumValue | undefined =>
      known(name) ?? {
        name,
        value: name,
        description: undefined,
        deprecationReason: undefined,
        extensions: {},
        astNode: undefined,
      };
  }
  return schema;
}
