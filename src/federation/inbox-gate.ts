// What an inbox POST must pass before its body is read or its signature checked
// (docs/federation.md#moderation): the server it comes from, as its signature's key names it,
// must not be blocked here. Whatever is refused here costs a header's parse and a look-up in
// memory, and changes nothing.
import type { FastifyRequest } from "fastify";
import type { Services } from "../domain/context.ts";

/**
 * The host of the key an inbox POST is signed with: draft-cavage's `Signature: keyId="…"` or
 * RFC 9421's `Signature-Input: sig1=(…);keyid="…"`. Undefined when unsigned (Fedify answers 401)
 * or when the key is no URL.
 */
export function sendingHost(headers: FastifyRequest["headers"]): string | undefined {
  const signature = headers["signature-input"] ?? headers.signature;
  const text = Array.isArray(signature) ? signature[0] : signature;
  const keyId = text && /keyid="([^"]+)"/i.exec(text)?.[1];
  if (!keyId) return undefined;
  try {
    return new URL(keyId).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/** The refusal of an inbox POST, or undefined to let it through. */
export function inboxGate(services: Pick<Services, "instances">) {
  return async (request: FastifyRequest): Promise<{ status: number; error: string } | undefined> => {
    const host = sendingHost(request.headers);
    if (!host) return undefined;
    if ((await services.instances.of(host)) === "block") return { status: 403, error: "NO_PERMISSION" };
    return undefined;
  };
}
