// Configuration is validated once; a bad value names its variable (docs/running.md#configuration).
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("loadConfig", () => {
  it("has the documented defaults (docs/running.md#configuration)", () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.host).toBe("127.0.0.1");
    expect(config.publicUrl).toBe("http://localhost:3000");
    expect(config.localHost).toBe("localhost:3000");
    expect(config.captcha.provider).toBe("dev");
    expect(config.rateLimitMultiplier).toBe(1);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.storageDir).toBe(`${config.dataDir}/files`);
    expect(config.corsOrigins).toBeUndefined();
  });

  it("keeps DATA_DIR under the installation's folder by default, wherever it runs from", () => {
    const cwd = process.cwd();
    process.chdir(os.tmpdir());
    try {
      expect(loadConfig({}).dataDir).toBe(path.join(ROOT, "data"));
      expect(loadConfig({}).storageDir).toBe(path.join(ROOT, "data", "files"));
      // A DATA_DIR given is taken as any path on a command line: from the current folder.
      expect(loadConfig({ DATA_DIR: "here" }).dataDir).toBe(path.join(process.cwd(), "here"));
    } finally {
      process.chdir(cwd);
    }
  });

  it("reads CORS_ORIGINS as a list of origins, or any origin for *", () => {
    expect(loadConfig({ CORS_ORIGINS: "https://app.example, http://localhost:5173" }).corsOrigins).toEqual([
      "https://app.example",
      "http://localhost:5173",
    ]);
    expect(loadConfig({ CORS_ORIGINS: "*" }).corsOrigins).toBeUndefined();
  });

  it("reads DATABASE_REPLICA_URL as a list of replicas of DATABASE_URL", () => {
    const config = loadConfig({
      DATABASE_URL: "postgres://primary/db",
      DATABASE_REPLICA_URL: "postgres://r1/db, postgresql://r2/db",
    });
    expect(config.databaseReplicaUrls).toEqual(["postgres://r1/db", "postgresql://r2/db"]);
    expect(loadConfig({}).databaseReplicaUrls).toEqual([]);
  });

  it("takes PUBLIC_URL's port from PORT when PUBLIC_URL is unset", () => {
    const config = loadConfig({ PORT: "8080" });
    expect(config.publicUrl).toBe("http://localhost:8080");
    expect(config.localHost).toBe("localhost:8080");
    expect(loadConfig({ PORT: "8080", PUBLIC_URL: "https://murmur.example/" }).publicUrl).toBe(
      "https://murmur.example",
    );
  });

  it("takes TOKEN_SIGNING_KEY as a 32-byte base64 seed", () => {
    const seed = Buffer.alloc(32, 7).toString("base64");
    expect(loadConfig({ TOKEN_SIGNING_KEY: seed }).tokenSigningKey).toBe(seed);
  });

  it("reads TRUST_PROXY as off, every proxy, a hop count or trusted addresses", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "false" }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: "10.0.0.0/8, 127.0.0.1,::1,fd00::/8,loopback" }).trustProxy).toEqual([
      "10.0.0.0/8",
      "127.0.0.1",
      "::1",
      "fd00::/8",
      "loopback",
    ]);
  });

  it.each([
    [{ TRUST_PROXY: "yes" }, "TRUST_PROXY"],
    [{ TRUST_PROXY: "10.0.0.0/33" }, "TRUST_PROXY"],
    [{ TRUST_PROXY: "10.0.0.1,proxy.example" }, "TRUST_PROXY"],
    [{ TRUST_PROXY: "-1" }, "TRUST_PROXY"],
    [{ TOKEN_SIGNING_KEY: "garbage" }, "TOKEN_SIGNING_KEY"],
    [{ TOKEN_SIGNING_KEY: "-----BEGIN PRIVATE KEY-----\nxyz\n-----END PRIVATE KEY-----" }, "TOKEN_SIGNING_KEY"],
    [{ METRICS_TOKEN: "short" }, "METRICS_TOKEN"],
    [{ PORT: "abc" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ PUBLIC_URL: "not a url" }, "PUBLIC_URL"],
    [{ DATABASE_URL: "mysql://x" }, "DATABASE_URL"],
    [{ SMTP_URL: "http://x" }, "SMTP_URL"],
    [{ CAPTCHA_PROVIDER: "nope" }, "CAPTCHA_PROVIDER"],
    [{ CAPTCHA_PROVIDER: "turnstile" }, "CAPTCHA_SECRET"],
    [{ NODE_ENV: "production" }, "CAPTCHA_PROVIDER"],
    [{ RATE_LIMIT_MULTIPLIER: "-1" }, "RATE_LIMIT_MULTIPLIER"],
    [{ MEILI_URL: "meili" }, "MEILI_URL"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ CORS_ORIGINS: "app.example" }, "CORS_ORIGINS"],
    [{ DATABASE_URL: "postgres://p/db", DATABASE_REPLICA_URL: "postgres://r/db,mysql://x" }, "DATABASE_REPLICA_URL"],
    [{ DATABASE_REPLICA_URL: "postgres://r/db" }, "DATABASE_REPLICA_URL"],
    [{ CORS_ORIGINS: "https://app.example/path" }, "CORS_ORIGINS"],
  ])("refuses %o naming %s", (env, variable) => {
    expect(() => loadConfig(env)).toThrow(new RegExp(`^invalid configuration: ${variable}\\b`));
  });

  it("never defaults to the dev captcha in production", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(/CAPTCHA_PROVIDER/);
    expect(loadConfig({ NODE_ENV: "production", CAPTCHA_PROVIDER: "dev" }).captcha.provider).toBe("dev");
  });
});
