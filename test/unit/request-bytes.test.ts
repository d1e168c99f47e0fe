// A fetch Request made of a body Fastify read keeps those bytes beside it (src/federation/request-bytes.ts):
// the inbox's depth check reads them there, not by cloning the Request; the body is left for Fedify.
import { describe, expect, it } from "vitest";
import { bytesOf, withBytes } from "../../src/federation/request-bytes.ts";

const post = (body: Uint8Array) =>
  new Request("http://murmur.test/inbox", { method: "POST", body, duplex: "half" } as RequestInit);

describe("a request's body bytes", () => {
  it("are the ones kept with it, the body still unread", async () => {
    const bytes = new TextEncoder().encode('{"type":"Create"}');
    const request = withBytes(post(bytes), bytes);
    expect(await bytesOf(request)).toBe(bytes);
    expect(request.bodyUsed).toBe(false);
    expect(await request.text()).toBe('{"type":"Create"}');
  });

  it("are read from a clone when none were kept", async () => {
    const request = post(new TextEncoder().encode("[1]"));
    expect(new TextDecoder().decode(await bytesOf(request))).toBe("[1]");
    expect(await request.text()).toBe("[1]");
  });
});
