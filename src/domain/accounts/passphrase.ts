// Passphrases are stored as bcrypt over a SHA-256 pre-hash (docs/accounts.md#passphrases): bcrypt
// reads only 72 bytes, and passphrases reach 512 characters. Hashing runs natively on libuv's
// thread pool (@node-rs/bcrypt), so a login never holds the event loop for the 100-250 ms a hash
// costs; its hashes are the same $2b$ format, and hashes made before ($2a$, $2b$ by bcryptjs) still
// verify.
import { createHash } from "node:crypto";
import os from "node:os";
import { hash, verify } from "@node-rs/bcrypt";

function preHash(passphrase: string): string {
  return createHash("sha256").update(passphrase, "utf8").digest("base64");
}

/**
 * Hashes at once, at most. The thread pool (4 threads unless UV_THREADPOOL_SIZE) also runs file
 * reads and writes, DNS lookups and the PBKDF2 of PostgreSQL's SCRAM sign-in: a burst of logins
 * holding every thread made new database connections time out. One thread is always left to
 * them, and more hashes at once than cores would not finish sooner.
 */
const MAX_HASHING = Math.max(1, Math.min(os.availableParallelism(), (Number(process.env.UV_THREADPOOL_SIZE) || 4) - 1));
let hashing = 0;
const waiting: (() => void)[] = [];

async function onPool<T>(work: () => Promise<T>): Promise<T> {
  if (hashing >= MAX_HASHING) await new Promise<void>((resolve) => waiting.push(resolve));
  else hashing += 1;
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, or is given back.
    const next = waiting.shift();
    if (next) next();
    else hashing -= 1;
  }
}

export function hashPassphrase(passphrase: string, cost: number): Promise<string> {
  // @node-rs/bcrypt 1.10 (the last release whose binaries every platform's package has; 2.0's
  // lock could not be completed, so `npm ci` refused it) writes $2y$, the same algorithm as $2b$
  // under PHP's name: stored as $2b$, as before.
  return onPool(async () => (await hash(preHash(passphrase), cost)).replace(/^\$2y\$/, "$2b$"));
}

export function verifyPassphrase(passphrase: string, passphraseHash: string): Promise<boolean> {
  return onPool(() => verify(preHash(passphrase), passphraseHash));
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
