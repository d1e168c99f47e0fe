// Remote keys parsed once. Fedify checks every inbox POST's signature with the sender's key as its
// key-value store keeps it, JSON-LD that it parses again each time (CryptographicKey.fromJsonLd: a
// JSON-LD expansion and an import of the PEM into Web Crypto), about 7% of the server's CPU taking
// notes in (bench/README.md, "Federation at scale"). The store hands out the same object for a key
// it remembers (src/federation/kv-store.ts), so a parse is kept by that object: a key stored anew
// (a rotation) is another object, parsed afresh. Fedify has no hook for its key cache's parse, so
// its static parse is wrapped, once, for the whole process: an object parsed again (the store's
// JSON is never changed) gets its first parse, any other is parsed as before.
import { CryptographicKey } from "@fedify/fedify/vocab";

type Parse = typeof CryptographicKey.fromJsonLd;

const parsed = new WeakMap<object, Promise<CryptographicKey>>();
let wrapped = false;

/** CryptographicKey.fromJsonLd, its answers kept by the object parsed (a key in the store's memory). */
export function parseKeysOnce(): void {
  if (wrapped) return;
  wrapped = true;
  const parse: Parse = CryptographicKey.fromJsonLd.bind(CryptographicKey);
  CryptographicKey.fromJsonLd = (json, options) => {
    if (typeof json !== "object" || json === null) return parse(json, options);
    let pending = parsed.get(json);
    if (!pending) {
      pending = parse(json, options);
      parsed.set(json, pending);
      // What failed to parse is not kept: Fedify then tries it as a Multikey.
      pending.catch(() => parsed.delete(json));
    }
    return pending;
  };
}
