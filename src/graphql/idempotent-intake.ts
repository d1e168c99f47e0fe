// Idempotency-Key on a GraphQL request (src/http/idempotency.ts): its JSON body is the
// fingerprint; an upload's files are received first, so their SHA-256 stands in it (an account's
// uploads only: nobody else may make the server read 100 MB).
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Services } from "../domain/context.ts";
import { sendError } from "../http/errors.ts";
import { beginIdempotent, type Idempotency, replay, type StoredAnswer } from "../http/idempotency.ts";
import { graphqlCaller } from "./caller.ts";
import { type ReceivedOperation, receiveUploads } from "./received-uploads.ts";

/** What the rest of the request does with its key: record its answer, or abandon it; and its uploads' scratch copies. */
export interface Intake {
  /** Keeps the answer for the key's later requests. */
  record(answer: StoredAnswer): Promise<void>;
  /** Lets the key's next request run (this one failed before it had an answer). */
  abandon(): Promise<void>;
  /** Removes the uploads' scratch copies, if any. */
  discard(): Promise<void>;
}

const NONE: Intake = { record: async () => {}, abandon: async () => {}, discard: async () => {} };

/**
 * Begins the request's Idempotency-Key, if it sends one: the Intake the rest of the request uses,
 * or undefined when it is answered here (a replay, or a refusal).
 */
export async function beginGraphqlIdempotency(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  multipart: boolean,
): Promise<Intake | undefined> {
  if (request.method !== "POST" || request.headers["idempotency-key"] === undefined) return NONE;
  let idempotent: Idempotency | undefined;
  let uploads: ReceivedOperation | undefined;
  try {
    const caller = await graphqlCaller(services, request);
    if (!multipart || caller.account) {
      uploads = multipart ? await receiveUploads(services, request.body) : undefined;
      if (uploads) request.body = uploads.body;
      idempotent = await beginIdempotent(services, caller, request, uploads?.fingerprint ?? request.body);
    }
  } catch (err) {
    await uploads?.discard();
    sendError(request, reply, err);
    return undefined;
  }
  if (idempotent && "replay" in idempotent) {
    await uploads?.discard();
    replay(reply, idempotent.replay);
    return undefined;
  }
  const recording = idempotent && "record" in idempotent ? idempotent : undefined;
  return {
    record: async (answer) => recording?.record(answer),
    abandon: async () => recording?.abandon(),
    discard: async () => uploads?.discard(),
  };
}
