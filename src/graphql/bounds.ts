// Every GraphQL request is bounded before anything runs (docs/http.md#graphql-bounds): too long a
// document, more than 20 aliases or root fields, deeper than 10 levels, or costlier than a bound (a
// list counts by its page size, see the `complexity` of each paged field) is refused with HTTP 400
// and `errors`, in the parser or the validator: no resolver runs and the database is not touched.
// Libraries: GraphQL Armor's token and alias limits; for depth and cost, @pothos/plugin-complexity,
// because its cost is declared on each field beside its resolver and can read the field's arguments
// (`first`, through variables too), where Armor's cost-limit weighs every object and scalar by a
// fixed depth factor and cannot count a list by its page size.
import { maxAliasesPlugin } from "@escape.tech/graphql-armor-max-aliases";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { createComplexityRule } from "@pothos/plugin-complexity";
import { GraphQLError, Kind, Lexer, Source, TokenKind, type ValidationRule, validate } from "graphql";
import type { Plugin } from "graphql-yoga";

export const MAX_ROOT_FIELDS = 20;
export const MAX_ALIASES = 20;
export const MAX_DEPTH = 10;
/** A page of 20 notes with every field of theirs costs a few thousand. */
export const MAX_COST = 50_000;
export const MAX_TOKENS = 5_000;
/**
 * Brackets (selections, arguments, lists and objects) open at once. graphql-js parses them by
 * recursion, and a few thousand open ones (within MAX_TOKENS) overflowed the stack: a 500. A
 * document within MAX_DEPTH, with a fragment or an input object at each level, stays far below.
 */
export const MAX_NESTING = 100;

const OPENING = new Set<string>([TokenKind.BRACE_L, TokenKind.BRACKET_L, TokenKind.PAREN_L]);
const CLOSING = new Set<string>([TokenKind.BRACE_R, TokenKind.BRACKET_R, TokenKind.PAREN_R]);

/**
 * Throws a syntax error when `source` opens more than MAX_NESTING brackets at once, read by
 * graphql-js's own lexer (strings and comments are no brackets), which does not recurse. A
 * token the lexer refuses, or MAX_TOKENS of them, end the scan: the parser says those.
 */
function refuseDeepNesting(source: string | Source): void {
  const lexer = new Lexer(typeof source === "string" ? new Source(source) : source);
  let depth = 0;
  try {
    for (let tokens = 0; tokens <= MAX_TOKENS; tokens++) {
      const kind: string = lexer.advance().kind;
      if (kind === TokenKind.EOF) return;
      if (OPENING.has(kind) && ++depth > MAX_NESTING) break;
      if (CLOSING.has(kind)) depth -= 1;
    }
  } catch {
    return;
  }
  if (depth > MAX_NESTING) throw new GraphQLError(`Syntax Error: nested deeper than ${MAX_NESTING} brackets.`);
}

/** Runs refuseDeepNesting before the parser (the token limit's, from the plugin before this one). */
const nestingBound: Plugin = {
  onParse: ({ parseFn, setParseFn }) => {
    setParseFn((source, options) => {
      refuseDeepNesting(source);
      return parseFn(source, options);
    });
  },
};

/** More than MAX_ROOT_FIELDS fields at the root of an operation, fragments included. */
const rootFieldsRule: ValidationRule = (context) => ({
  OperationDefinition(node) {
    let count = 0;
    const pending = [...node.selectionSet.selections];
    while (pending.length) {
      const selection = pending.pop();
      if (selection?.kind === Kind.FIELD) count += 1;
      else if (selection?.kind === Kind.INLINE_FRAGMENT) pending.push(...selection.selectionSet.selections);
      else if (selection?.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = context.getFragment(selection.name.value);
        if (fragment) pending.push(...fragment.selectionSet.selections);
      }
    }
    if (count > MAX_ROOT_FIELDS) {
      context.reportError(new GraphQLError(`Root fields limit of ${MAX_ROOT_FIELDS} exceeded, found ${count}.`));
    }
  },
});

function refused(error: Error): GraphQLError {
  const extensions = error instanceof GraphQLError ? error.extensions : {};
  return new GraphQLError(error.message, {
    nodes: error instanceof GraphQLError ? error.nodes : undefined,
    // `spec: false`: yoga would otherwise answer a legacy `application/json` client 200.
    extensions: {
      ...extensions,
      code: extensions.code ?? "GRAPHQL_VALIDATION_FAILED",
      http: { status: 400, spec: false },
    },
  });
}

/** Parse and validation failures are the client's: HTTP 400, whatever the Accept header says. */
const refusedAs400: Plugin = {
  onParse:
    () =>
    ({ result, replaceParseResult }) => {
      if (result instanceof GraphQLError) replaceParseResult(refused(result));
    },
  onValidate: ({ context, validateFn, setValidationFn }) => {
    const { variables, operationName } =
      (context as { params?: { variables?: Record<string, unknown>; operationName?: string } }).params ?? {};
    setValidationFn((schema, document, rules, typeInfo, options) => {
      let errors: readonly Error[];
      try {
        errors = validateFn(schema, document, rules, typeInfo, options);
      } catch (error) {
        // An Armor limit, thrown at the first node past it.
        errors = [error instanceof Error ? error : new Error(String(error))];
      }
      // The bounds of a valid document: its root fields, and Pothos' complexity rule for its
      // depth and cost (each field's `complexity`, with the request's variables: `first: $n`
      // counts as n). Run after the standard rules, so an unknown field is said once.
      if (!errors.length) {
        errors = validate(schema, document, [
          rootFieldsRule,
          createComplexityRule({
            context,
            variableValues: variables ?? {},
            operationName,
            maxDepth: MAX_DEPTH,
            maxComplexity: MAX_COST,
          }),
        ]);
      }
      return errors.map(refused);
    });
  },
};

export function boundsPlugins(): Plugin[] {
  return [
    // Each throws its refusal from the parser or the validator, at once; refusedAs400 below
    // turns it into a 400 answer.
    maxTokensPlugin({ n: MAX_TOKENS }) as Plugin,
    nestingBound,
    maxAliasesPlugin({ n: MAX_ALIASES, allowList: [] }) as Plugin,
    refusedAs400,
  ];
}
