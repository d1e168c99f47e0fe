// Actors' key pairs (docs/federation.md#actors), kept in PostgreSQL so that every instance of a
// fleet signs with the same keys: RSA for draft-cavage HTTP Signatures, Ed25519 for Object
// Integrity Proofs.
import { type DocumentLoader, exportJwk, generateCryptoKeyPair, importJwk, type SenderKeyPair } from "@fedify/fedify";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import type { ActorKeyKind } from "../generated/prisma/client.ts";

/** The instance actor's identifier: no account name starts with `_` (src/domain/accounts/rules.ts). */
export const INSTANCE_ACTOR = "_instance";

/** The order keys are given to Fedify in: its first RSA key is the actor's `publicKey`. */
const KINDS: ActorKeyKind[] = ["rsa", "ed25519"];

/**
 * A new pair of one kind. RSA is 2048 bits, as Mastodon's: Fedify's generateCryptoKeyPair makes
 * 4096-bit keys, which took about 2 s of CPU each on the development machine (2048: about 0.1 s).
 */
async function generate(kind: ActorKeyKind): Promise<CryptoKeyPair> {
  if (kind === "ed25519") return generateCryptoKeyPair("Ed25519");
  return crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  ) as Promise<CryptoKeyPair>;
}

/**
 * The key pairs of actors, made the first time they are asked for and kept. Keys never change once
 * stored, so the imported pairs are cached; two instances making one actor's keys at once keep the
 * first stored (ON CONFLICT DO NOTHING) and both read that back.
 */
export class ActorKeys {
  private readonly cache = new LRUCache<string, CryptoKeyPair[]>({ max: 2000 });
  private readonly making = new Map<string, Promise<CryptoKeyPair[]>>();
  /** The instance actor's signing key by the origin its actor is on. */
  private readonly signers = new Map<string, SenderKeyPair>();

  constructor(private readonly db: Db) {}

  /** The actor's pairs, RSA first, made now if it has none yet (accounts from before federation). */
  pairsOf(owner: string): Promise<CryptoKeyPair[]> {
    const cached = this.cache.get(owner);
    if (cached) return Promise.resolve(cached);
    let pending = this.making.get(owner);
    if (!pending) {
      pending = this.load(owner).finally(() => this.making.delete(owner));
      this.making.set(owner, pending);
    }
    return pending;
  }

  /**
   * The instance actor's RSA key as it signs fetches: `#main-key` of `actor`, the name Fedify
   * gives an actor's first key. Kept: asked of Fedify by identifier, it built the actor's URI from
   * its template and the actor's list of pairs again for every activity received (~0.1 ms each).
   */
  async instanceSigner(origin: string, actor: () => URL): Promise<SenderKeyPair> {
    let signer = this.signers.get(origin);
    if (!signer) {
      const [rsa] = await this.pairsOf(INSTANCE_ACTOR);
      signer = { keyId: new URL("#main-key", actor()), privateKey: rsa.privateKey };
      this.signers.set(origin, signer);
    }
    return signer;
  }

  private async load(owner: string): Promise<CryptoKeyPair[]> {
    let rows = await this.read(owner);
    const missing = KINDS.filter((kind) => !rows.some((row) => row.kind === kind));
    if (missing.length) {
      await this.store(owner, missing);
      rows = await this.read(owner);
    }
    const pairs = await Promise.all(
      KINDS.map(async (kind) => {
        const row = rows.find((r) => r.kind === kind);
        if (!row) throw new Error(`actor ${owner} has no ${kind} key`);
        return {
          publicKey: await importJwk(row.publicKey as JsonWebKey, "public"),
          privateKey: await importJwk(row.privateKey as JsonWebKey, "private"),
        };
      }),
    );
    this.cache.set(owner, pairs);
    return pairs;
  }

  private read(owner: string) {
    return this.db.actorKey.findMany({ where: { owner }, select: { kind: true, publicKey: true, privateKey: true } });
  }

  private async store(owner: string, kinds: ActorKeyKind[]): Promise<void> {
    const data = await Promise.all(
      kinds.map(async (kind) => {
        const pair = await generate(kind);
        const [publicKey, privateKey] = await Promise.all([exportJwk(pair.publicKey), exportJwk(pair.privateKey)]);
        return { owner, kind, publicKey: publicKey as object, privateKey: privateKey as object };
      }),
    );
    await this.db.actorKey.createMany({ data, skipDuplicates: true });
  }
}

const byDb = new WeakMap<Db, ActorKeys>();

/** The keys of one database's actors: one cache per database, shared by the registration hook and Fedify. */
export function actorKeysOf(db: Db): ActorKeys {
  let keys = byDb.get(db);
  if (!keys) {
    keys = new ActorKeys(db);
    byDb.set(db, keys);
  }
  return keys;
}

/**
 * Makes a new account's keys after its registration, off the registration's path (an RSA pair
 * costs about 0.1 s of CPU); one account at a time, so a burst of registrations does not take
 * every core. Should the process stop first, pairsOf makes them on first use.
 */
export function makeKeysSoon(db: Db, accountId: bigint, log: Logger): void {
  queue = queue
    .then(() => actorKeysOf(db).pairsOf(accountId.toString()))
    .then(
      () => undefined,
      (err) => log.warn({ err, accountId: accountId.toString() }, "actor keys not made at registration"),
    );
}

let queue: Promise<void> = Promise.resolve();

/** What of a Fedify context signing as the instance actor takes. */
interface SigningContext {
  data: { db: Db };
  origin: string;
  getActorUri(identifier: string): URL;
  getDocumentLoader(identity: SenderKeyPair): DocumentLoader;
}

/** The instance actor's signing key (ActorKeys.instanceSigner) for `ctx`'s fetches. */
export function instanceSigner(ctx: SigningContext): Promise<SenderKeyPair> {
  return actorKeysOf(ctx.data.db).instanceSigner(ctx.origin, () => ctx.getActorUri(INSTANCE_ACTOR));
}

/** A loader whose fetches are signed as the instance actor. */
export async function instanceLoader(ctx: SigningContext): Promise<DocumentLoader> {
  return ctx.getDocumentLoader(await instanceSigner(ctx));
}

/** Once the keys asked for so far are made (or given up): before the database is closed. */
export function keysMade(): Promise<void> {
  return queue;
}
