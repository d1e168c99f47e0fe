// Passphrases are stored as bcrypt over a SHA-256 pre-hash (CONTRACT 4): bcrypt reads only
// 72 bytes, and passphrases reach 512 characters.
import { createHash } from "node:crypto";
import bcrypt from "bcryptjs";

function preHash(passphrase: string): string {
  return createHash("sha256").update(passphrase, "utf8").digest("base64");
}

export function hashPassphrase(passphrase: string, cost: number): Promise<string> {
  return bcrypt.hash(preHash(passphrase), cost);
}

export function verifyPassphrase(passphrase: string, hash: string): Promise<boolean> {
  return bcrypt.compare(preHash(passphrase), hash);
}

const dummyHashes = new Map<number, Promise<string>>();

/** Spends the time a real check takes, so a missing account cannot be told by timing. */
export async function spendPassphraseCheck(passphrase: string, cost: number): Promise<void> {
  let dummy = dummyHashes.get(cost);
  if (!dummy) {
    dummy = hashPassphrase("murmur-dummy-passphrase", cost);
    dummyHashes.set(cost, dummy);
  }
  await verifyPassphrase(passphrase, await dummy);
}
