// Fedify on Fastify: a request Fedify answers (discovery, an actor or collection asked for as
// ActivityPub, an inbox POST) is handed to federation.fetch as a Fetch Request; every other request,
// and every one Fedify declines, goes on to Murmur's own routes unchanged (docs/federation.md#actors).
import type { Federation } from "@fedify/fedify";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { answerHeaders } from "../http/hop-by-hop.ts";
import { BytesRequest } from "./request-bytes.ts";

export interface FedifyMountOptions<TContextData> {
  /** Every Fedify id is built on this origin, and requests are handed to Fedify as made to it. */
  origin: string;
  contextData: TContextData;
  /** Paths whose POST Fedify takes whole (inboxes), as Fedify's templates (`/users/{identifier}/inbox`). */
  inboxes: string[];
  /** The largest inbox body read; past it, 413 before Fedify sees anything. */
  bodyLimit: number;
  /**
   * Asked of every inbox POST before its body is read: a refusal to answer at once (a blocked
   * server, one over its rate), or undefined to go on.
   */
  admit?(request: FastifyRequest, reply: FastifyReply): Promise<{ status: number; error: string } | undefined>;
}

/**
 * Paths only Fedify serves, whatever the Accept header: WebFinger, NodeInfo's discovery document
 * and NodeInfo itself (asked for as `application/json`).
 */
const FEDERATION_ONLY = /^\/(?:\.well-known\/(?:webfinger|nodeinfo)|nodeinfo\/)/;

/**
 * Whether a GET asks for ActivityPub (`application/activity+json`, or JSON-LD, which is how the
 * ActivityStreams profile is asked for): only then may a REST path answer with an object. No
 * Accept, any type, `application/json`: the REST answer, as before.
 */
export function asksForActivityPub(accept: string | undefined): boolean {
  return accept !== undefined && /application\/(?:activity\+json|ld\+json)/i.test(accept);
}

export async function mountFedify<TContextData>(
  app: FastifyInstance,
  federation: Federation<TContextData>,
  options: FedifyMountOptions<TContextData>,
): Promise<void> {
  /** Fedify's answer, or undefined when it declines (no route, no object, or not asked for ActivityPub). */
  const fetch = async (request: FastifyRequest, body?: Buffer): Promise<Response | undefined> => {
    let declined = false;
    const decline = () => {
      declined = true;
      return new Response(null, { status: 404 });
    };
    const response = await federation.fetch(toFetchRequest(request, options.origin, body), {
      contextData: options.contextData,
      onNotFound: decline,
      onNotAcceptable: decline,
    });
    return declined ? undefined : response;
  };

  // GETs first, in onRequest: the REST route (or the not-found handler) that would answer has been
  // chosen, and runs as before when Fedify declines. The path is read once, and only for GETs.
  // A callback: every request runs it, and an async hook cost each a promise and a microtask turn.
  app.addHook("onRequest", (request, reply, done) => {
    if (request.method !== "GET") return done();
    if (!asksForActivityPub(request.headers.accept) && !FEDERATION_ONLY.test(request.url)) return done();
    fetch(request)
      .then(async (response) => {
        if (response) await send(reply, response);
        else done();
      })
      .catch(done);
  });

  // Inbox POSTs: the body kept as its bytes, which the Digest header is checked against.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: options.bodyLimit }, (_request, body, done) =>
      done(null, body),
    );
    const { admit } = options;
    if (admit) {
      scope.addHook("onRequest", async (request, reply) => {
        const refusal = await admit(request, reply);
        if (refusal) return reply.code(refusal.status).send({ error: refusal.error });
      });
    }
    for (const template of options.inboxes) {
      // Not held to the per-address limits (docs/protection.md#rate-limits), made for clients: a
      // server is counted by who signs (admit), and one busy server sends more than a client may.
      scope.post(fastifyPath(template), { config: { rateLimit: false } }, async (request, reply) => {
        const response = await fetch(request, request.body as Buffer | undefined);
        if (!response) return reply.callNotFound();
        return send(reply, response);
      });
    }
  });
}

/** A Fedify URI template's path as Fastify's: `{identifier}` is `:identifier`. */
function fastifyPath(template: string): string {
  return template.replace(/\{(\w+)\}/g, ":$1");
}

function toFetchRequest(request: FastifyRequest, origin: string, body?: Buffer): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const url = new URL(request.url, origin);
  const init: RequestInit = { method: request.method, headers };
  if (body === undefined || request.method === "GET" || request.method === "HEAD") return new Request(url, init);
  // Its body read from these bytes, however often (src/federation/request-bytes.ts).
  return new BytesRequest(url, init, new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
}

/** Murmur's codes for the refusals Fedify words as plain text (docs/http.md#errors). */
const ERROR_CODES: Record<number, string> = {
  400: "INVALID_REQUEST",
  401: "UNAUTHORIZED",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  413: "PAYLOAD_TOO_LARGE",
};

async function send(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  const headers = answerHeaders(response.headers);
  // A refusal in words ("Invalid JSON.", an unsigned inbox POST's "Failed to verify the request
  // signature."): every refusal is `{"error": CODE}`, as REST's are.
  const type = headers["content-type"] ?? "";
  if (response.status >= 400 && response.status in ERROR_CODES && (type === "" || type.startsWith("text/"))) {
    delete headers["content-type"];
    return reply.code(response.status).headers(headers).send({ error: ERROR_CODES[response.status] });
  }
  reply.code(response.status).headers(headers);
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : undefined;
  return reply.send(body);
}
