// Web Crypto's digests and signature checks answered in the calling thread
// (src/federation/inline-crypto.ts): the same answers as Node's own, settled when returned (Node's
// wait for a thread of its pool), and every case it does not answer left to Node's own, errors
// included.
import { beforeAll, describe, expect, it } from "vitest";
import { inlineCryptoOnce } from "../../src/federation/inline-crypto.ts";

const subtle = globalThis.crypto.subtle;
/** Node's own, taken before the wrapping. */
const own = { digest: subtle.digest.bind(subtle), verify: subtle.verify.bind(subtle) };
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

let rsa: CryptoKeyPair;
let ed: CryptoKeyPair;
let pss: CryptoKeyPair;

beforeAll(async () => {
  const rsaParams = { modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" };
  rsa = (await subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", ...rsaParams }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  pss = (await subtle.generateKey({ name: "RSA-PSS", ...rsaParams }, true, ["sign", "verify"])) as CryptoKeyPair;
  ed = (await subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
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
  it("checks RSASSA-PKCS1-v1_5 and Ed25519 signatures as Node does, settled when returned", async () => {
    for (const [name, keys] of [
      ["RSASSA-PKCS1-v1_5", rsa],
      ["Ed25519", ed],
    ] as const) {
      const signature = new Uint8Array(await subtle.sign(name, keys.privateKey, text));
      const tampered = signature.slice();
      tampered[10] ^= 1;
      for (const data of sources()) {
        const answer = subtle.verify({ name }, keys.publicKey, signature, data);
        expect(await settledAtOnce(answer)).toBe(true);
        expect(await answer).toBe(true);
        expect(await subtle.verify(name, keys.publicKey, tampered, data)).toBe(false);
        expect(await own.verify(name, keys.publicKey, tampered, data)).toBe(false);
      }
      // Signed bytes other than these, and a signature of the wrong length.
      expect(await subtle.verify(name, keys.publicKey, signature, text.subarray(1))).toBe(false);
      for (const short of [signature.subarray(1), new Uint8Array(0)]) {
        expect(await subtle.verify(name, keys.publicKey, short, text)).toBe(
          await own.verify(name, keys.publicKey, short, text),
        );
      }
    }
  });

  it("leaves other algorithms and keys that may not verify to Node, with its errors", async () => {
    const signature = await subtle.sign({ name: "RSA-PSS", saltLength: 32 }, pss.privateKey, text);
    expect(await subtle.verify({ name: "RSA-PSS", saltLength: 32 }, pss.publicKey, signature, text)).toBe(true);
    const rsaSignature = await subtle.sign("RSASSA-PKCS1-v1_5", rsa.privateKey, text);
    // A private key, a key of another algorithm than the one named.
    await expect(subtle.verify("RSASSA-PKCS1-v1_5", rsa.privateKey, rsaSignature, text)).rejects.toMatchObject({
      name: "InvalidAccessError",
    });
    await expect(subtle.verify("RSASSA-PKCS1-v1_5", pss.publicKey, rsaSignature, text)).rejects.toMatchObject({
      name: "InvalidAccessError",
    });
  });
});
