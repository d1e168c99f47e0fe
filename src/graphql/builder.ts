// The Pothos schema builder: plugins and context. Types live one per file beside it.
import SchemaBuilder from "@pothos/core";
import ComplexityPlugin from "@pothos/plugin-complexity";
import DataloaderPlugin from "@pothos/plugin-dataloader";
import ErrorsPlugin from "@pothos/plugin-errors";
import PrismaPlugin from "@pothos/plugin-prisma";
import { DateTimeResolver, JSONObjectResolver } from "graphql-scalars";
import type { FileUpload } from "graphql-upload-minimal";
import type { Context } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import type PrismaTypes from "../generated/pothos-types.ts";
import { getDatamodel } from "../generated/pothos-types.ts";
import type { RateLimitGroup } from "../http/rate-limits.ts";

/** A GraphQL request's context: a domain context, and the request's rate-limit counters. */
export interface GraphqlContext extends Context {
  /** Counts one use of `group` by this request; throws DomainError RATE_LIMITED past its limit. */
  rateLimit(group: RateLimitGroup): Promise<void>;
}

export const builder = new SchemaBuilder<{
  Context: GraphqlContext;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  Scalars: {
    Upload: { Input: Promise<FileUpload>; Output: never };
    DateTime: { Input: Date; Output: Date | string };
    JSONObject: { Input: Record<string, unknown>; Output: object };
  };
}>({
  plugins: [ErrorsPlugin, PrismaPlugin, ComplexityPlugin, DataloaderPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  // A DomainError thrown by a service becomes a typed error result carrying its code, except a
  // failure of the request's credentials: that one is the whole request's, HTTP 401 (yoga.ts).
  errors: {
    defaultTypes: [DomainError],
    onResolvedError: (error) => {
      if (error instanceof DomainError && error.credentials) throw error;
    },
  },
  // Each field's cost, for the bound checked before execution (bounds.ts): 1 a field, lists by
  // their page size. Not checked again in resolvers.
  complexity: { disabled: true, defaultComplexity: 1, defaultListMultiplier: 20 },
});

// ISO 8601 UTC with milliseconds (docs/http.md#timestamps), as graphql-scalars writes and reads it.
builder.addScalarType("DateTime", DateTimeResolver, {});
// A JSON document given whole, as REST gives it (an account's export: its shape is openapi.json's AccountExport).
builder.addScalarType("JSONObject", JSONObjectResolver, {});

builder.queryType({ description: "Reads. Each field calls the same domain service as its REST route." });
builder.mutationType({ description: "Changes. Each field calls the same domain service as its REST route." });

/** For mutations that answer nothing but success: true once `work` is done. */
export async function done(work: Promise<void>): Promise<true> {
  await work;
  return true;
}

/**
 * A mutation counted against a rate-limit group (docs/protection.md#rate-limits), as a REST route
 * names its `rateLimit`: every occurrence of the field in a document counts one, against the same
 * counter as the REST route; past the limit its result is DomainError RATE_LIMITED and nothing is
 * done.
 */
export function limited<Root, Args, Result>(
  group: RateLimitGroup,
  resolve: (root: Root, args: Args, ctx: GraphqlContext) => Promise<Result>,
): (root: Root, args: Args, ctx: GraphqlContext) => Promise<Result> {
  return async (root, args, ctx) => {
    await ctx.rateLimit(group);
    return resolve(root, args, ctx);
  };
}
