// Web Crypto's digests answered in the calling thread (src/federation/inline-crypto.ts): the same
// answers as Node's own, settled when returned (Node's wait for a thread of its pool), every case
// it does not answer left to Node's own, errors included; signature checks left to Node's pool.
import { beforeAll, describe, expect, it } from "vitest";
import { inlineCryptoOnce } from "../../src/federation/inline-crypto.ts";

const subtle = globalThis.crypto.subtle;
/** Node's own, taken before the wrapping. */
const own = { digest: subtle.digest.bind(subtle) };
const nodeVerify = subtle.verify;
const PENDING = Symbol("pending");

/** Whether a promise had settled when it was returned (its answer did not wait for a turn). */
async function settledAtOnce(answer: Promise<unknown>): Promise<boolean> {
  return (await Promise.race([answer, Promise.resolve(PENDING)])) !== PENDING;
}

const text = new TextEncoder().encode("POST /inbox HTTP/1.1 and a body of some length ".repeat(20));
/** The same bytes as every kind of BufferSource, one of them a view into a larger buffer. */
function sources(): BufferSource[] {
  const larger = new Uint8Array(text.length + 10);
  larger.set(text, 7);
  return [text, text.slice().buffer, larger.subarray(7, 7 + text.length), new DataView(larger.buffer, 7, text.length)];
}

beforeAll(() => {
  inlineCryptoOnce();
});

describe("digest", () => {
  it("gives Node's answer for every hash and kind of bytes, settled when returned", async () => {
    for (const name of ["SHA-1", "SHA-256", "SHA-384", "SHA-512", "sha-256"]) {
      const expected = Buffer.from(await own.digest(name, text)).toString("hex");
      for (const data of sources()) {
        for (const algorithm of [name, { name }]) {
          const answer = subtle.digest(algorithm, data);
          expect(await settledAtOnce(answer)).toBe(true);
          const digest = await answer;
          expect(digest).toBeInstanceOf(ArrayBuffer);
          expect(Buffer.from(digest).toString("hex")).toBe(expected);
        }
      }
    }
  });

  it("leaves an unknown hash or what is not bytes to Node, with its errors", async () => {
    await expect(subtle.digest("MD5", text)).rejects.toMatchObject({ name: "NotSupportedError" });
    await expect(subtle.digest("SHA-256", "text" as unknown as BufferSource)).rejects.toThrow(TypeError);
  });
});

describe("verify", () => {
  it("stays Node's own, whose checks run in its thread pool", () => {
    expect(subtle.verify).toBe(nodeVerify);
  });
});
