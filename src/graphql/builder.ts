// The Pothos schema builder: plugins and context. Types live one per file beside it.
import SchemaBuilder from "@pothos/core";
import ErrorsPlugin from "@pothos/plugin-errors";
import PrismaPlugin from "@pothos/plugin-prisma";
import type { FileUpload } from "graphql-upload-minimal";
import type { Context } from "../domain/context.ts";
import { DomainError } from "../domain/errors.ts";
import type PrismaTypes from "../generated/pothos-types.ts";
import { getDatamodel } from "../generated/pothos-types.ts";

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  Scalars: { Upload: { Input: Promise<FileUpload>; Output: never } };
}>({
  plugins: [ErrorsPlugin, PrismaPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  // A DomainError thrown by a service becomes a typed error result carrying its code.
  errors: { defaultTypes: [DomainError] },
});

builder.queryType({ description: "Reads. Each field calls the same domain service as its REST route." });
builder.mutationType({ description: "Changes. Each field calls the same domain service as its REST route." });

/** For mutations that answer nothing but success: true once `work` is done. */
export async function done(work: Promise<void>): Promise<true> {
  await work;
  return true;
}
