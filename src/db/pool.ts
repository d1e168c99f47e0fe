// node-postgres pools as Murmur makes them.
import pg from "pg";

/**
 * A pool whose connections' errors are always heard. A connection the server ends (its PostgreSQL
 * stopped or restarted) is an 'error' of its client: the pool hears an idle one's, and a connection
 * handed out is heard by whoever holds it only while one of its queries runs. Unheard, the error
 * ended the process (a CI run of test/chaos-postgres.test.ts: "Unhandled 'error' event",
 * "terminating connection due to unexpected postmaster exit"). Heard here, the connection leaves
 * the pool and the next query on it fails, as any query of a lost connection does.
 */
export function newPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool({ connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000, ...config });
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}
