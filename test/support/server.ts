// A Murmur server for one test file, on its own clone of the migrated template database.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import type { Logger } from "pino";
import { afterAll, beforeAll, inject } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { ensureDatabase } from "../../src/db/database.ts";
import { createLogger } from "../../src/log.ts";
import { buildServer } from "../../src/server.ts";
import { type AppServices, closeServices, createServices } from "../../src/services.ts";
import { checkEveryAnswer } from "./document-check.ts";
import { databaseUrl } from "./global-setup.ts";

export const PUBLIC_URL = "http://murmur.test";
export const HOST = "murmur.test";

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test answers are read field by field
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
}

export interface RequestOptions {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  /** Raw payload, sent as is (for malformed bodies). */
  payload?: string | Buffer;
}

export interface TestServer {
  app: FastifyInstance;
  services: AppServices;
  dataDir: string;
  databaseUrl: string;
  request(method: string, url: string, options?: RequestOptions): Promise<Answer>;
  close(): Promise<void>;
}

/**
 * A fresh database cloned from the template, and a server on it. `env` adds configuration;
 * `url` puts the server on a migrated database of the caller's instead; `log` is its logger (none
 * by default).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  url?: string,
  log: Logger = createLogger("silent"),
): Promise<TestServer> {
  url ??= await freshDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-data-"));
  // Test runs turn rate limits off (docs/protection.md#rate-limits); test/rate-limits.test.ts turns
  // them on.
  const config = loadConfig({
    DATA_DIR: dataDir,
    BCRYPT_COST: "4",
    PUBLIC_URL,
    LOG_LEVEL: "silent",
    RATE_LIMIT_MULTIPLIER: "0",
    // A fixed id: leases (test/worker-lease.test.ts, and the server processes other tests start)
    // would outlive a test file that drops its database under a running server.
    WORKER_ID: "1",
    ...env,
  });
  const services = await createServices(config, url, log);
  // As src/main.ts does: mail goes out through the queue.
  services.mail.start(url);
  const app = await buildServer(services);
  // Every answer is held to openapi.json; a file whose answers stray from it fails on close.
  const mismatches = checkEveryAnswer(app);
  await app.ready();
  const server: TestServer = {
    app,
    services,
    dataDir,
    databaseUrl: url,
    async request(method, requestUrl, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let payload = options.payload;
      if (options.body !== undefined) {
        payload = JSON.stringify(options.body);
        headers["content-type"] ??= "application/json";
      }
      const response = await app.inject({
        method: method as "GET",
        url: requestUrl,
        headers,
        payload,
      });
      let body: unknown = response.body;
      if (String(response.headers["content-type"] ?? "").includes("application/json") && response.body) {
        body = JSON.parse(response.body);
      }
      return { status: response.statusCode, body, headers: response.headers };
    },
    async close() {
      running.delete(server);
      await app.close();
      await closeServices(services);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (mismatches.length) {
        throw new Error(`answers not as openapi.json documents them:\n${[...new Set(mismatches)].join("\n")}`);
      }
    },
  };
  running.add(server);
  return server;
}

/**
 * A server for the test file and an operator's own connection to its database (what is changed
 * beside the server: an operator's SQL, another instance, the CLI), opened before the file's tests
 * and closed after them. Its members are set once they are open.
 */
export function serverAndOperator(env: Record<string, string> = {}): { server: TestServer; operator: pg.Client } {
  const opened = {} as { server: TestServer; operator: pg.Client };
  beforeAll(async () => {
    opened.server = await startTestServer(env);
    opened.operator = new pg.Client({ connectionString: opened.server.databaseUrl });
    await opened.operator.connect();
  });
  afterAll(async () => {
    await opened.operator?.end();
    await opened.server?.close();
  });
  return opened;
}

/** This file's test servers running now, by database: mail of one may be sent by another. */
const running = new Set<TestServer>();

export function testServersOn(databaseUrl: string): TestServer[] {
  return [...running].filter((s) => s.databaseUrl === databaseUrl);
}

/**
 * Two instances of one fresh database for the test file, as a fleet of two (each its own batches,
 * its own ids), opened before its tests and closed after them. Its members are set once they are open.
 */
export function twoInstances(): { server: TestServer; other: TestServer } {
  const opened = {} as { server: TestServer; other: TestServer };
  beforeAll(async () => {
    const url = await freshDatabase();
    const TOKEN_SIGNING_KEY = randomBytes(32).toString("base64");
    opened.server = await startTestServer({ TOKEN_SIGNING_KEY }, url);
    opened.other = await startTestServer({ TOKEN_SIGNING_KEY, WORKER_ID: "2" }, url);
  });
  afterAll(async () => {
    await opened.other?.close();
    await opened.server?.close();
  });
  return opened;
}

export async function freshDatabase(): Promise<string> {
  const adminUrl = inject("adminUrl");
  const database = `murmur_test_${inject("runId")}_${randomBytes(4).toString("hex")}`;
  await ensureDatabase(adminUrl, database, inject("templateDatabase"));
  return databaseUrl(adminUrl, database);
}
