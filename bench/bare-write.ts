// The bare baseline of a write: Fastify and node-postgres running exactly the SQL statements one
// Murmur write sends (captured from its own code by bench/create-note.ts, passed in a JSON file),
// no more. Ids minted while the statements were captured are minted afresh for each request
// (snowflakes of a worker no instance leases), and the captured author is replaced by the one of
// the request's connection, so 32 connections can post as 32 authors as Murmur's runs do.
// Run as its own process: `node --import tsx bench/bare-write.ts <write.json>`; it prints its port.
import fs from "node:fs";
import type { Socket } from "node:net";
import Fastify from "fastify";
import pg from "pg";
import { SnowflakeGenerator } from "../src/db/snowflake.ts";

export interface CapturedWrite {
  databaseUrl: string;
  statements: { query: string; params: unknown[] }[];
  /** Ids the write minted, as decimal strings: each is minted afresh per request. */
  minted: string[];
  /** The author the statements were captured as. */
  author: string;
  /** Authors given to connections in turn (one for every connection posting as one account). */
  authors: string[];
}

const [file] = process.argv.slice(2);
const write = JSON.parse(fs.readFileSync(file, "utf8")) as CapturedWrite;
// Murmur's pool's size and idle timeout (src/db/pool.ts), as bench/bare.ts.
const pool = new pg.Pool({ connectionString: write.databaseUrl, max: 20, idleTimeoutMillis: 30_000 });
const ids = new SnowflakeGenerator(1023);
const minted = new Set(write.minted);

/** A parameter with each minted id and the author replaced. */
function bind(value: unknown, fresh: Map<string, string>, author: string): unknown {
  if (Array.isArray(value)) return value.map((v) => bind(v, fresh, author));
  const text = typeof value === "string" || typeof value === "number" ? String(value) : undefined;
  if (text === undefined) return value;
  if (minted.has(text)) return fresh.get(text);
  if (text === write.author) return author;
  return value;
}

const authorOf = new WeakMap<Socket, string>();
let connections = 0;
const app = Fastify();
// Named, as Murmur's statements are: parsed and planned once per connection.
const named = write.statements.map((s, i) => ({ name: `bare-write${i}`, text: s.query, params: s.params }));
app.post("/", async (request, reply) => {
  const socket = request.raw.socket;
  let author = authorOf.get(socket);
  if (author === undefined) {
    author = write.authors[connections++ % write.authors.length];
    authorOf.set(socket, author);
  }
  const fresh = new Map(write.minted.map((id) => [id, ids.next().toString()]));
  const results: unknown[] = [];
  for (const { name, text, params } of named) {
    const values = params.map((p) => bind(p, fresh, author));
    results.push((await pool.query({ name, text, values })).rows);
  }
  reply.status(201);
  return results;
});
// A port the system picks: a random one had met another process's.
await app.listen({ port: 0, host: "127.0.0.1" });
console.log(`ready ${(app.server.address() as { port: number }).port}`);
