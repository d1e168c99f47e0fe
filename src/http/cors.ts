// CORS for REST and GraphQL alike (@fastify/cors): browsers on the origins of CORS_ORIGINS (any,
// by default) may call every route, preflight included. No credentials mode: authentication is
// a Bearer header, never a cookie, so no origin is ever trusted with a browser's cookies.
import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";

/** Request headers a browser may send: those the API reads, and GraphQL's CSRF header. */
const ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "If-Range",
  "Range",
  "Last-Event-ID",
  "X-GraphQL-Yoga-CSRF",
  "X-Request-Id",
];

/** Response headers a page may read. */
const EXPOSED_HEADERS = [
  "ETag",
  "Retry-After",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Content-Range",
  "Idempotent-Replayed",
  "X-Error-Detail",
  "WWW-Authenticate",
  "Location",
  "X-Request-Id",
];

export async function registerCors(app: FastifyInstance, config: Pick<Config, "corsOrigins">): Promise<void> {
  await app.register(cors, {
    origin: config.corsOrigins ?? "*",
    credentials: false,
    // Joined here, once: @fastify/cors joins a list again for every request it answers.
    methods: "GET, HEAD, POST, PUT, PATCH, DELETE",
    allowedHeaders: ALLOWED_HEADERS.join(", "),
    exposedHeaders: EXPOSED_HEADERS.join(", "),
    maxAge: 86_400,
    // A preflight is answered 204 whatever the path, before routing.
    strictPreflight: false,
  });
}
