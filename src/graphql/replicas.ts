// GraphQL's side of read replicas (docs/fleet.md#read-replicas), as rest/mount.ts does it for
// routes: a query reads from a replica that has replayed its caller's writes; after a mutation, the
// caller's next reads on any instance see what it wrote.

import { getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import { keepWrites } from "../db/replicas.ts";
import type { Context } from "../domain/context.ts";

export function useReadReplicas(): Plugin<Context> {
  return {
    async onExecute({ args, extendContext }) {
      const ctx = args.contextValue;
      if (!ctx.replicas) return;
      if (getOperationAST(args.document, args.operationName)?.operation === "mutation") {
        ctx.readYourWrites = { account: ctx.caller.account?.id };
        return { onExecuteDone: () => keepWrites(ctx) };
      }
      extendContext({ db: await ctx.replicas.readsFor(ctx.caller.account?.id) });
    },
  };
}
