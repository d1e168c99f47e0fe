// Web Crypto's digests and signature checks done in the calling thread. Fedify hashes every
// inbox POST's body and checks its signature through `crypto.subtle`, and Node runs each such call
// as a job of its thread pool: the call's arguments copied, the job queued, a pool thread woken,
// its answer handed back to the event loop. For a SHA-256 of a 1 KB body or a 2,048-bit RSA check
// that hand-off costs more than the work: 70-100 µs of the main thread's CPU a digest against 5
// µs for node:crypto's createHash, 65-100 µs a check against 35-40 µs for its verify (this
// machine, 3,000 calls in turns), and each call waits ~150-220 µs for its answer. Fedify takes no
// crypto of one's own, so `crypto.subtle.digest` and `crypto.subtle.verify` are wrapped, once, for
// the whole process: the plain cases (a known hash of bytes; RSASSA-PKCS1-v1_5 or Ed25519 with a
// public key that may verify) are answered by node:crypto at once, the same answer; anything else
// (another algorithm, a wrong key, arguments that are not bytes) goes to Node's own, which also
// raises its errors. Signing stays Node's: an RSA signature is ~1 ms of work, which the pool
// does beside the event loop.
import { createHash, KeyObject, verify } from "node:crypto";

/** Web Crypto's hash names and node:crypto's. */
const HASHES: Record<string, string> = {
  "SHA-1": "sha1",
  "SHA-256": "sha256",
  "SHA-384": "sha384",
  "SHA-512": "sha512",
};

let wrapped = false;

/** `crypto.subtle.digest` and `verify` answered in the calling thread where they can be. */
export function inlineCryptoOnce(): void {
  if (wrapped) return;
  wrapped = true;
  const subtle = globalThis.crypto.subtle;
  const digest = subtle.digest.bind(subtle);
  const check = subtle.verify.bind(subtle);
  subtle.digest = (algorithm, data) => {
    const hash = HASHES[nameOf(algorithm)?.toUpperCase() ?? ""];
    const bytes = bytesOf(data);
    if (hash === undefined || bytes === undefined) return digest(algorithm, data);
    const out = createHash(hash).update(bytes).digest();
    return Promise.resolve(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer);
  };
  subtle.verify = (algorithm, key, signature, data) => {
    const name = nameOf(algorithm);
    const [signed, bytes] = [bytesOf(signature), bytesOf(data)];
    if (
      !(key instanceof CryptoKey) ||
      key.type !== "public" ||
      !key.usages.includes("verify") ||
      key.algorithm.name !== name ||
      signed === undefined ||
      bytes === undefined
    )
      return check(algorithm, key, signature, data);
    // node:crypto's hash of an RSA check; none for Ed25519; undefined: not one of the plain cases.
    const hash =
      name === "Ed25519"
        ? null
        : name === "RSASSA-PKCS1-v1_5"
          ? HASHES[(key.algorithm as RsaHashedKeyAlgorithm).hash.name]
          : undefined;
    if (hash === undefined) return check(algorithm, key, signature, data);
    try {
      return Promise.resolve(verify(hash, bytes, KeyObject.from(key), signed));
    } catch {
      // A signature node:crypto will not read (a wrong length): Node's Web Crypto answers it.
      return check(algorithm, key, signature, data);
    }
  };
}

/** An algorithm's name, given as a string or as an object naming it. */
function nameOf(algorithm: AlgorithmIdentifier): string | undefined {
  if (typeof algorithm === "string") return algorithm;
  return typeof algorithm?.name === "string" ? algorithm.name : undefined;
}

/** The bytes of a BufferSource, viewed where they lie; undefined for anything else. */
function bytesOf(source: unknown): Uint8Array | undefined {
  if (ArrayBuffer.isView(source))
    return source.buffer instanceof ArrayBuffer
      ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
      : undefined;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  return undefined;
}
