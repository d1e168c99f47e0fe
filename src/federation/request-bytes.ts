// The bytes of a request's body as Fastify read them, kept beside the fetch Request made of them
// (src/federation/fastify.ts), for what reads them before Fedify does (the inbox's depth check,
// src/federation/inbox-receive.ts): cloning the Request and reading the clone's stream back cost
// 30-50 µs of CPU a POST, ~1% of what the server spends taking an activity in (bench/README.md,
// "Intake, 2026-11-28").
const bodies = new WeakMap<Request, Uint8Array>();

/** `request`, whose body is `bytes`. */
export function withBytes(request: Request, bytes: Uint8Array): Request {
  bodies.set(request, bytes);
  return request;
}

/** The bytes of `request`'s body, leaving the body itself unread. */
export async function bytesOf(request: Request): Promise<Uint8Array> {
  return bodies.get(request) ?? new Uint8Array(await request.clone().arrayBuffer());
}
