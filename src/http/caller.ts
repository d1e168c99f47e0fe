// Who a request comes from, resolved once per request whichever protocol serves it: a GraphQL
// request reads its caller in several places (the Idempotency-Key's owner, the compiled page, the
// executor's context), each of which once verified the token and looked the account up again.
import type { FastifyRequest } from "fastify";
import type { Caller, Services } from "../domain/context.ts";
import { authenticate } from "../domain/sessions/caller.ts";
import { logAccount } from "./request-log.ts";

/**
 * Keyed by the request object: a WebSocket's operations are requests made up for yoga, with no
 * Fastify decoration, and each is resolved as its own.
 */
const resolved = new WeakMap<object, Promise<Caller>>();

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
  let caller = resolved.get(request);
  if (!caller) {
    caller = authenticate(services, credentials, request.ip).then(
      (found) => {
        logAccount(request, found.account?.id);
        return found;
      },
      (err) => {
        resolved.delete(request);
        throw err;
      },
    );
    resolved.set(request, caller);
  }
  return caller;
}
