// The bare baseline: Fastify and node-postgres running exactly the SQL statements one home
// timeline page of Murmur sends (captured from Prisma, passed in a JSON file), no more.
// Run as its own process (bench/server.ts startBareServer): `node --import tsx bench/bare.ts <statements.json>`.
import fs from "node:fs";
import Fastify from "fastify";
import pg from "pg";

interface Statements {
  databaseUrl: string;
  statements: { query: string; params: unknown[] }[];
}

const [file] = process.argv.slice(2);
const { databaseUrl, statements } = JSON.parse(fs.readFileSync(file, "utf8")) as Statements;
// Murmur's pool's size and idle timeout (src/db/pool.ts): with pg-pool's 10 s, its connections closed
// between turns and planned the statement again at each.
const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, idleTimeoutMillis: 30_000 });
const app = Fastify();
// Named, as Murmur's statements are: parsed and planned once per connection.
const named = statements.map((s, i) => ({ name: `bare${i}`, text: s.query, values: s.params }));
app.get("/", async () => {
  const results: unknown[] = [];
  for (const statement of named) results.push((await pool.query(statement)).rows);
  return results;
});
await app.listen({ port: 0, host: "127.0.0.1" });
// Ended by SIGTERM: leaving through exit lets --cpu-prof (BENCH_NODE_ARGS) write its profile.
process.on("SIGTERM", () => process.exit(0));
console.log(`ready ${(app.server.address() as { port: number }).port}`);
