// A remote actor's key pair, as test peers sign with: RSA-2048 (RSASSA-PKCS1-v1_5, SHA-256), the
// key draft-cavage signatures use, exportable for its actor's publicKeyPem.
export function rsaKeyPair(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  ) as Promise<CryptoKeyPair>;
}
