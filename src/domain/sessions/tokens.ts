// Authorization and refresh tokens: EdDSA (Ed25519) JWTs signed by jose (docs/accounts.md#tokens).
// Without TOKEN_SIGNING_KEY a fresh key is made per process, so tokens die with it.
import { createPrivateKey, createPublicKey, type KeyObject, randomUUID } from "node:crypto";
import { errors, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { SERVICE_EPOCH_MS } from "../../db/snowflake.ts";
import { DomainError } from "../errors.ts";

export type TokenType = "access" | "refresh";

export const TOKEN_LIFETIME_SECONDS: Record<TokenType, number> = { access: 900, refresh: 2_592_000 };

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

export interface TokenClaims {
  accountId: bigint;
  jti: string;
  issuedAt: Date;
  expiresAt: Date;
}

type SigningKey = CryptoKey | KeyObject;

// PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows it.
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** TOKEN_SIGNING_KEY: a PKCS#8 PEM Ed25519 private key, or its 32-byte seed in base64 or base64url. */
export function parseSigningKey(text: string): KeyObject {
  if (text.includes("-----BEGIN")) {
    const key = createPrivateKey(text.replace(/\\n/g, "\n"));
    if (key.asymmetricKeyType !== "ed25519") throw new Error("TOKEN_SIGNING_KEY must be an Ed25519 key");
    return key;
  }
  const seed = Buffer.from(text, "base64");
  if (seed.length !== 32) throw new Error("TOKEN_SIGNING_KEY must be an Ed25519 PEM or a 32-byte base64 seed");
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
}

// Tokens already verified, until they expire: a request's token is checked by the rate limiter
// and again by authentication, and a client sends the same one many times.
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenIssuer {
  /** By type, then by the token itself (a key made of both was a string built at every request). */
  private readonly verified: Record<TokenType, Map<string, { claims: TokenClaims; expiresAtMs: number }>> = {
    access: new Map(),
    refresh: new Map(),
  };

  private constructor(
    private readonly privateKey: SigningKey,
    private readonly publicKey: SigningKey,
  ) {}

  static async create(signingKey?: string): Promise<TokenIssuer> {
    if (signingKey) {
      const privateKey = parseSigningKey(signingKey);
      return new TokenIssuer(privateKey, createPublicKey(privateKey));
    }
    const pair = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    return new TokenIssuer(pair.privateKey, pair.publicKey);
  }

  async sign(accountId: bigint, type: TokenType, now = new Date()): Promise<IssuedToken> {
    const jti = randomUUID();
    const issuedAt = Math.floor(now.getTime() / 1000);
    const expiresAt = new Date((issuedAt + TOKEN_LIFETIME_SECONDS[type]) * 1000);
    // `iat` is in seconds; `ims`, the same moment in milliseconds, tells a token issued just
    // after its account's tokens were revoked from one issued just before (tokensValidFrom).
    const token = await new SignJWT({ typ: type, ims: now.getTime() })
      .setProtectedHeader({ alg: "EdDSA", typ: "JWT" })
      .setSubject(accountId.toString())
      .setJti(jti)
      .setIssuedAt(issuedAt)
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .sign(this.privateKey);
    return { token, jti, expiresAt };
  }

  /**
   * The claims of a valid token of `type`; otherwise INVALID_TOKEN, or EXPIRED_TOKEN for an
   * expired one. `credentials` marks the error as one of the Authorization header (401).
   */
  async verify(token: string, type: TokenType, credentials: boolean): Promise<TokenClaims> {
    const verified = this.verified[type];
    const known = verified.get(token);
    if (known && Date.now() < known.expiresAtMs) return known.claims;
    const invalid = () => new DomainError("INVALID_TOKEN", { credentials });
    try {
      const { payload } = await jwtVerify(token, this.publicKey, { algorithms: ["EdDSA"] });
      if (payload.typ !== type || typeof payload.sub !== "string" || !/^[0-9]{1,20}$/.test(payload.sub)) {
        throw invalid();
      }
      if (typeof payload.jti !== "string" || typeof payload.iat !== "number" || typeof payload.exp !== "number") {
        throw invalid();
      }
      const claims = {
        accountId: BigInt(payload.sub),
        jti: payload.jti,
        issuedAt: new Date(typeof payload.ims === "number" ? payload.ims : payload.iat * 1000),
        expiresAt: new Date(payload.exp * 1000),
      };
      if (verified.size >= VERIFIED_CACHE_SIZE) verified.clear();
      verified.set(token, { claims, expiresAtMs: payload.exp * 1000 });
      return claims;
    } catch (err) {
      if (err instanceof DomainError) throw err;
      if (err instanceof errors.JWTExpired) throw new DomainError("EXPIRED_TOKEN", { credentials });
      throw invalid();
    }
  }
}

/**
 * `expires_in` (docs/accounts.md#tokens): the token's expiry in whole seconds since the service
 * epoch.
 */
export function secondsSinceServiceEpoch(at: Date): number {
  return Math.floor((at.getTime() - SERVICE_EPOCH_MS) / 1000);
}
