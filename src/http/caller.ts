// Who a request comes from, resolved once per request whichever protocol serves it: a GraphQL
// request reads its caller in several places (the Idempotency-Key's owner, the compiled page, the
// executor's context), each of which once verified the token and looked the account up again.
import type { FastifyRequest } from "fastify";
import type { Caller, Services } from "../domain/context.ts";
import { authenticate } from "../domain/sessions/caller.ts";
import { logAccount } from "./request-log.ts";

/**
 * Kept on the request object (a WebSocket's operations are requests made up for yoga, with no
 * Fastify decoration, and each is resolved as its own), not in a WeakMap keyed by it: V8 walks
 * such a map's entries in every scavenge, some 3% of get note's server CPU (bench/README.md).
 */
const RESOLVED = Symbol("caller");
type Resolving = { [RESOLVED]?: Promise<Caller> };

/**
 * The caller of `request` by `credentials` (an Authorization header's value, or one a protocol
 * reads from elsewhere), resolved on first use and shared by every later one; its account is
 * named in the request's log lines. A failure (the database out of reach) is not kept: a later use
 * tries again, as it did before the caller was shared.
 */
export function callerOf(
  services: Services,
  request: FastifyRequest,
  credentials: string | undefined,
): Promise<Caller> {
  const kept = request as Resolving;
  let caller = kept[RESOLVED];
  if (!caller) {
    caller = authenticate(services, credentials, request.ip).then(
      (found) => {
        logAccount(request, found.account?.id);
        return found;
      },
      (err) => {
        kept[RESOLVED] = undefined;
        throw err;
      },
    );
    kept[RESOLVED] = caller;
  }
  return caller;
}
