// The compiled pages' walk over a selection (compiled-pages.ts): GraphQL's CollectFields for the
// selections it takes, and each object type's fields written as SQL from what the schema's fields
// carry (projected.ts). A field that carries nothing, or a selection the walk does not take, is
// NotCompiled, and its document is left to the executor.
import {
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  getNamedType,
  isObjectType,
  Kind,
  type SelectionSetNode,
  type ValueNode,
} from "graphql";
import { Prisma } from "../db/client.ts";
import type { Column, Relation, Viewer } from "../projection/field.ts";

/** SQL writing one value of the row aliased `t`, for a caller. */
export type SqlOf = (t: string, viewer: Viewer) => Prisma.Sql;

/** What a field's extensions may carry for the walk (projected.ts puts it there); a type: extensions are a record. */
export type CompiledExtensions = {
  /** Its projection: a column, or a relation to the field's own type. */
  projection?: Column<never> | Relation<never, unknown>;
  /** Or how a field with arguments or a structure of its own compiles. */
  compile?: (field: FieldNode, walk: Walk) => SqlOf;
};

/** Fields of a type that is no projection (a connection's edges, its page info), by name. */
export type Structure = Record<string, (f: FieldNode) => SqlOf>;

/** A Structure's field without arguments or a selection: `sql`. */
export const scalar =
  (sql: SqlOf) =>
  (f: FieldNode): SqlOf => {
    leaf(f);
    return sql;
  };

/** Thrown while compiling: this document is left to the executor. */
export class NotCompiled extends Error {}

export const no = (): never => {
  throw new NotCompiled();
};

export const keyOf = (f: FieldNode) => f.alias?.value ?? f.name.value;

/** A field without arguments or a selection of its own. */
export function leaf(f: FieldNode): string {
  if (f.arguments?.length || f.selectionSet) no();
  return f.name.value;
}

/** A field with a selection and no arguments. */
export function selectionOf(f: FieldNode): SelectionSetNode | undefined {
  return f.arguments?.length ? no() : f.selectionSet;
}

/** SQL of a constant. */
export const raw = (text: string): SqlOf => {
  const sql = Prisma.raw(text);
  return () => sql;
};

/** A document, and the variables of the request its plan is for, walked against its schema. */
export class Walk {
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
    /** The operation's variables' defaults. */
    private readonly defaults: Map<string, ValueNode>,
  ) {}

  /**
   * The fields of `selection` for an object of type `type`, in order, fragments spread: GraphQL's
   * CollectFields, for selections that repeat no response key (one that does is left to the
   * executor, which merges them). A fragment on another type of a union contributes nothing.
   */
  fieldsOf(selection: SelectionSetNode | undefined, type: string, out: FieldNode[] = [], seen = new Set<string>()) {
    if (!selection) return no();
    for (const s of selection.selections) {
      if (s.directives?.length) no();
      if (s.kind === Kind.FIELD) {
        const key = keyOf(s);
        if (seen.has(key)) no();
        seen.add(key);
        out.push(s);
        continue;
      }
      const fragment = s.kind === Kind.FRAGMENT_SPREAD ? this.fragments.get(s.name.value) : s;
      if (!fragment) return no();
      const on = fragment.typeCondition?.name.value;
      if (on === undefined || on === type) this.fieldsOf(fragment.selectionSet, type, out, seen);
      else if (on !== "DomainError") no();
    }
    return out;
  }

  /**
   * An object of type `type` from the fields' own SQL: its projection's (projected.ts), or its
   * `compile`. `structure` adds fields of types that are no projection (a connection's edges
   * and page info), by name.
   */
  object(selection: SelectionSetNode | undefined, type: string, structure: Structure = {}): SqlOf {
    const objectType = this.schema.getType(type);
    if (!isObjectType(objectType)) return no();
    const fields = this.fieldsOf(selection, type);
    if (fields.length === 0 || fields.length > 50) no(); // PostgreSQL's json_build_object takes 50 pairs
    const parts = fields.map((f) => ({
      key: Prisma.raw(`'${keyOf(f)}'`),
      value: this.#field(f, objectType, structure),
    }));
    return (t, viewer) =>
      Prisma.sql`json_build_object(${Prisma.join(
        parts.map((p) => Prisma.sql`${p.key}, ${p.value(t, viewer)}`),
        ", ",
      )})`;
  }

  #field(f: FieldNode, type: GraphQLObjectType, structure: Structure): SqlOf {
    const name = f.name.value;
    if (name === "__typename") {
      leaf(f);
      return raw(`'${type.name}'`);
    }
    if (Object.hasOwn(structure, name)) return structure[name](f);
    const schemaField = type.getFields()[name] ?? no();
    const { projection, compile } = schemaField.extensions as CompiledExtensions;
    if (compile) return compile(f, this);
    if (projection?.kind === "column") {
      leaf(f);
      return projection.sql;
    }
    if (projection?.kind === "relation") {
      const child = this.object(selectionOf(f), getNamedType(schemaField.type).name);
      return (t, viewer) => projection.sql(t, (alias) => child(alias, viewer), viewer);
    }
    return no();
  }

  /** An argument's value: a literal, or a variable's (its default when not given); undefined for null. */
  argumentValue(value: ValueNode | undefined): unknown {
    switch (value?.kind) {
      case undefined:
      case Kind.NULL:
        return undefined;
      case Kind.INT:
      case Kind.STRING:
      case Kind.BOOLEAN:
        return value.value;
      case Kind.VARIABLE: {
        const name = value.name.value;
        if (name in this.variables) return this.variables[name] ?? undefined;
        const fallback = this.defaults.get(name);
        return fallback?.kind === Kind.VARIABLE ? no() : this.argumentValue(fallback);
      }
      default:
        return no();
    }
  }

  /** An Int argument (a literal's text, or a variable's number), or undefined for none. */
  intArgument(value: ValueNode | undefined): number | undefined {
    const given = this.argumentValue(value);
    if (given === undefined) return undefined;
    const first = Number(given);
    return Number.isInteger(first) ? first : no();
  }

  /** A String or ID argument, or undefined for none. */
  stringArgument(value: ValueNode | undefined): string | undefined {
    const given = this.argumentValue(value);
    return given === undefined
      ? undefined
      : typeof given === "string" || typeof given === "number"
        ? String(given)
        : no();
  }

  /** A Boolean argument, or undefined for none. */
  booleanArgument(value: ValueNode | undefined): boolean | undefined {
    const given = this.argumentValue(value);
    return given === undefined || typeof given === "boolean" ? given : no();
  }
}
