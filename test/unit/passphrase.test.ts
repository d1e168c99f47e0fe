// Passphrase hashes (docs/accounts.md#passphrases): the stored format is unchanged, and hashing
// leaves the event loop free while it runs.
import { pbkdf2 } from "node:crypto";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { hashPassphrase, verifyPassphrase } from "../../src/domain/accounts/passphrase.ts";

// Made by bcryptjs (the hasher before @node-rs/bcrypt) over the SHA-256 pre-hash of
// "correct-horse-battery": accounts registered then must still log in.
const BCRYPTJS_HASHES = [
  "$2a$04$ovGO/Ak/Ud3o3lPyjOowdOlLyi2kQxLMDY7jV2.r2x1DekiuCjfCC",
  "$2b$04$0F5QO.XjM1sG49TGynkJY.NHTV.wazwL2o9YpZPnex7zOpVz6udhK",
];

describe("passphrase hashes", () => {
  it.each(BCRYPTJS_HASHES)("verify %s, made by bcryptjs", async (stored) => {
    expect(await verifyPassphrase("correct-horse-battery", stored)).toBe(true);
    expect(await verifyPassphrase("correct-horse-battery!", stored)).toBe(false);
  });

  it("are bcrypt $2b$ at the configured cost", async () => {
    const stored = await hashPassphrase("correct-horse-battery", 5);
    expect(stored).toMatch(/^\$2b\$05\$[./A-Za-z0-9]{53}$/);
    expect(await verifyPassphrase("correct-horse-battery", stored)).toBe(true);
    expect(await verifyPassphrase("correct-horse-batter", stored)).toBe(false);
  });

  it("never hold the event loop: it idles through 4 hashes at cost 12", async () => {
    // The event loop's utilisation (its time running, not waiting for I/O) counts what the main
    // thread does, whatever else shares the machine's cores.
    const before = performance.eventLoopUtilization();
    const started = performance.now();
    await Promise.all([1, 2, 3, 4].map(() => hashPassphrase("correct-horse-battery", 12)));
    const took = performance.now() - started;
    const { utilization } = performance.eventLoopUtilization(before);
    // Each hash costs some 250 ms of CPU; on the main thread (bcryptjs) the loop would be busy
    // nearly all that time. Off it, the loop still wakes for the test runner's own messages, and
    // under the whole suite's load on two cores those turns stretch: 0.43 was seen once, where
    // a hash on the loop gives nearly 1.
    expect(took).toBeGreaterThan(200);
    expect(utilization).toBeLessThan(0.7);
  });

  it("leave the thread pool a thread for other work (PostgreSQL's SCRAM sign-in, files, DNS)", async () => {
    const finished: string[] = [];
    const hashes = Array.from({ length: 8 }, (_, i) =>
      hashPassphrase("correct-horse-battery", 12).then(() => finished.push(`hash ${i}`)),
    );
    // SCRAM-SHA-256's PBKDF2, as node-postgres runs it when it opens a connection.
    await promisify(pbkdf2)("secret", "salt", 4096, 32, "sha256").then(() => finished.push("pbkdf2"));
    await Promise.all(hashes);
    expect(finished[0]).toBe("pbkdf2");
  });
});
