// A fetch Request made of a body Fastify read answers its reads from those bytes
// (src/federation/request-bytes.ts): Fedify's clones and reads (the JSON, then the Digest's bytes)
// and the inbox's depth check, however many, without a stream to tee and copy back.
import { describe, expect, it } from "vitest";
import { BytesRequest, bytesOf } from "../../src/federation/request-bytes.ts";

const JSON_BODY = '{"type":"Create","content":"é"}';

const sent = () =>
  new BytesRequest(
    "http://murmur.test/inbox",
    { method: "POST", headers: { "content-type": "application/activity+json", digest: "SHA-256=x" } },
    new TextEncoder().encode(JSON_BODY),
  );

describe("a request made of the bytes Fastify read", () => {
  it("answers every read from them, as often as asked, and is never used up", async () => {
    const request = sent();
    expect(await request.clone().json()).toEqual(JSON.parse(JSON_BODY));
    expect(new TextDecoder().decode(await request.clone().arrayBuffer())).toBe(JSON_BODY);
    expect(await request.text()).toBe(JSON_BODY);
    expect(await request.json()).toEqual(JSON.parse(JSON_BODY));
    expect(new TextDecoder().decode(await request.bytes())).toBe(JSON_BODY);
    expect(await (await request.blob()).text()).toBe(JSON_BODY);
    // What Fedify asks before it reads: neither used up nor locked.
    expect(request.bodyUsed).toBe(false);
    expect(request.body).toBeNull();
  });

  it("is its own clone, with its method, URL, headers and bytes", async () => {
    const request = sent();
    const clone = request.clone();
    // No new Request built: the clone is the request, read again as often as asked.
    expect(clone).toBe(request);
    expect(clone).toBeInstanceOf(BytesRequest);
    expect(clone).toBeInstanceOf(Request);
    expect([clone.method, clone.url, clone.headers.get("digest")]).toEqual([
      "POST",
      "http://murmur.test/inbox",
      "SHA-256=x",
    ]);
    expect(await clone.text()).toBe(JSON_BODY);
  });

  it("gives its bytes to the depth check as they are; another request's are read from a clone", async () => {
    const request = sent();
    expect(await bytesOf(request)).toBe(request.sent);
    const streamed = new Request("http://murmur.test/inbox", {
      method: "POST",
      body: new TextEncoder().encode("[1]"),
      duplex: "half",
    } as RequestInit);
    expect(new TextDecoder().decode(await bytesOf(streamed))).toBe("[1]");
    expect(await streamed.text()).toBe("[1]");
  });

  it("an ArrayBuffer read is a copy: changing it leaves the bytes as they were", async () => {
    const request = sent();
    new Uint8Array(await request.arrayBuffer()).fill(0);
    expect(await request.text()).toBe(JSON_BODY);
  });
});
