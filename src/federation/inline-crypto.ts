// Web Crypto's digests done in the calling thread. Fedify hashes every inbox POST's body through
// `crypto.subtle.digest`, and Node runs each such call as a job of its thread pool: the call's
// arguments copied, the job queued, a pool thread woken, its answer handed back to the event
// loop. For a SHA-256 of a 1 KB body that hand-off costs more than the work: 9.5 µs of the main
// thread's CPU a digest against 2.5 µs for node:crypto's createHash (this machine, 20,000 calls,
// the thread's own CPU time from /proc). Fedify takes no crypto of one's own, so
// `crypto.subtle.digest` is wrapped, once, for the whole process: a known hash of bytes is
// answered by node:crypto at once, the same answer; anything else goes to Node's own, which also
// raises its errors. Signature checks stay Node's: an RSA check is work the pool does beside the
// event loop, 6-20 µs of the main thread a check against 28-50 µs (2,048 bits) and 92-128 µs
// (4,096 bits) for node:crypto's verify done in the thread; signing, ~1 ms, likewise.
import { createHash } from "node:crypto";

/** Web Crypto's hash names and node:crypto's. */
const HASHES: Record<string, string> = {
  "SHA-1": "sha1",
  "SHA-256": "sha256",
  "SHA-384": "sha384",
  "SHA-512": "sha512",
};

let wrapped = false;

/** `crypto.subtle.digest` answered in the calling thread where it can be. */
export function inlineCryptoOnce(): void {
  if (wrapped) return;
  wrapped = true;
  const subtle = globalThis.crypto.subtle;
  const digest = subtle.digest.bind(subtle);
  subtle.digest = (algorithm, data) => {
    const hash = HASHES[nameOf(algorithm)?.toUpperCase() ?? ""];
    const bytes = bytesOf(data);
    if (hash === undefined || bytes === undefined) return digest(algorithm, data);
    const out = createHash(hash).update(bytes).digest();
    return Promise.resolve(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer);
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
